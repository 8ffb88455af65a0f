extends Control


func _ready():
	visible = true


func show_panel():
	visible = true
