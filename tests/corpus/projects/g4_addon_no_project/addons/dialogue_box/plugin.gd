@tool
extends EditorPlugin


func _enter_tree() -> void:
	add_custom_type("DialogueBox", "Control", preload("dialogue_box.gd"), null)


func _exit_tree() -> void:
	remove_custom_type("DialogueBox")
