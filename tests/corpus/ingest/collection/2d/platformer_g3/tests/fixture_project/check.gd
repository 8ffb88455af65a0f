extends Node

@onready var label: Label = $Label


func _ready() -> void:
	await get_tree().process_frame
	label.text = "ok"
