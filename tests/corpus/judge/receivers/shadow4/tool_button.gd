class_name ToolButton extends Control
## A toolbar entry of the farm screen. Godot 4 has no engine ToolButton, so the name is free.

signal picked(tool_id: String)

@export var tool_id := ""


func _gui_input(event: InputEvent) -> void:
	if event is InputEventMouseButton and event.pressed:
		picked.emit(tool_id)
