extends Node2D

var push_force = Vector2(0, -40)


func push(v):
	owner.move_and_slide(v)


func kick():
	position += push_force
