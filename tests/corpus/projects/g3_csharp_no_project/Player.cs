using Godot;

public class Player : Area2D
{
    [Export] public int Speed = 400;
}
