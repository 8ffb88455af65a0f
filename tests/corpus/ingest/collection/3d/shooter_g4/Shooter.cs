using Godot;

public partial class Shooter : CharacterBody3D
{
}
