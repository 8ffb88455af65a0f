tool
extends StaticBody2D

# Solid ledge drawn as a flat rectangle. It is a tool script so that changing
# the width in the inspector resizes the collision shape and redraws the
# platform right away in the editor.

const THICKNESS = 16.0

export var width = 128.0 setget set_width
export var color = Color("5b7553") setget set_color


func _ready():
	_update_shape()


func set_width(value):
	width = max(value, THICKNESS)
	# The setter also runs while the scene is being instanced, before the
	# CollisionShape2D child exists.
	if is_inside_tree():
		_update_shape()
	update()
	update_configuration_warning()


func set_color(value):
	color = value
	update()


func _update_shape():
	# The shape resource is local to scene, so resizing it here doesn't
	# affect the other platforms.
	$CollisionShape2D.shape.extents = Vector2(width / 2.0, THICKNESS / 2.0)


func _draw():
	draw_rect(Rect2(-width / 2.0, -THICKNESS / 2.0, width, THICKNESS), color)


func _get_configuration_warning():
	if width > 2048:
		return "Very wide platforms are hard to read on screen, consider splitting them."
	return ""
