@tool
extends Node2D

@export var radius: float = 32.0:
	set(value):
		radius = value
		queue_redraw()


func _draw() -> void:
	draw_circle(Vector2.ZERO, radius, Color.CORNFLOWER_BLUE)


func _grow_button() -> void:
	radius *= 1.5
