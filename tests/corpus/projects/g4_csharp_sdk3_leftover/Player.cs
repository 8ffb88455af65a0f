using Godot;

public partial class Player : Area2D
{
    [Export] public int Speed = 400;
}
