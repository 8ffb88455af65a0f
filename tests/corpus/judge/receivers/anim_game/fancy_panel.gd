extends "res://base_panel.gd"


func _ready():
	._ready()
	$Title.text = "Ready"


func place():
	rect_position = Vector2(10, 10)


func resize(w, h):
	rect_size = Vector2(w, h)


func hide_title():
	$Title.visible = false
