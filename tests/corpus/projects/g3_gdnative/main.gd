extends Node2D

onready var field = $Field


func _ready():
	field.seed_value = 42
	field.generate(Vector2(64, 64))


func _draw():
	for p in field.points():
		draw_circle(p, 2.0, Color(1, 1, 1))
