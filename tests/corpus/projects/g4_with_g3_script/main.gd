extends Node2D

const Ghost := preload("res://enemies/ghost.tscn")


func _ready() -> void:
	for i in 3:
		var ghost := Ghost.instantiate()
		ghost.position = Vector2(100 * i, 50)
		add_child(ghost)
