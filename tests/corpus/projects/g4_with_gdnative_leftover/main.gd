extends Node2D

@onready var field: Node2D = $Field


func _ready() -> void:
	field.seed_value = 42
	field.generate(Vector2(64, 64))


func _draw() -> void:
	for p: Vector2 in field.points():
		draw_circle(p, 2.0, Color.WHITE)
