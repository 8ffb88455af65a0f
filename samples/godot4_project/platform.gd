@tool
class_name Platform
extends StaticBody2D

## Solid ledge drawn as a flat rectangle. It is a tool script so that changing
## the width in the inspector resizes the collision shape and redraws the
## platform right away in the editor.

const THICKNESS := 16.0

@export var width := 128.0:
	set(value):
		width = maxf(value, THICKNESS)
		# The setter also runs while the scene is being instantiated, before
		# the CollisionShape2D child is ready.
		if is_node_ready():
			_update_shape()
		queue_redraw()
		update_configuration_warnings()

@export var color := Color("5b7553"):
	set(value):
		color = value
		queue_redraw()

@onready var collision_shape: CollisionShape2D = $CollisionShape2D


func _ready() -> void:
	_update_shape()


func _update_shape() -> void:
	# The shape resource is local to scene, so resizing it here doesn't
	# affect the other platforms.
	var rect := collision_shape.shape as RectangleShape2D
	rect.size = Vector2(width, THICKNESS)


func _draw() -> void:
	draw_rect(Rect2(-width / 2.0, -THICKNESS / 2.0, width, THICKNESS), color)


func _get_configuration_warnings() -> PackedStringArray:
	var warnings := PackedStringArray()
	if width > 2048.0:
		warnings.append("Very wide platforms are hard to read on screen, consider splitting them.")
	return warnings
