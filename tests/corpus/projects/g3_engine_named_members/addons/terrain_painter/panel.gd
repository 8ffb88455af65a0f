tool
extends VBoxContainer

signal brush_changed(size)

onready var _slider = $BrushSlider


func _ready():
	_slider.connect("value_changed", self, "_on_slider_changed")


func _on_slider_changed(value):
	emit_signal("brush_changed", int(value))
