tool
extends EditorPlugin


func _enter_tree():
	add_custom_type("ShakeCamera", "Camera2D", preload("shake_camera.gd"), null)


func _exit_tree():
	remove_custom_type("ShakeCamera")
