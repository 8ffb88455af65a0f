@tool
class_name DialogueBox
extends Control

signal line_finished
signal dialogue_finished

@export_multiline var lines: PackedStringArray = []
@export_range(5.0, 120.0) var characters_per_second := 30.0

var _index := 0
var _tween: Tween

@onready var _label: RichTextLabel = $Label


func start() -> void:
	_index = 0
	_show_line()


func _show_line() -> void:
	if _index >= lines.size():
		dialogue_finished.emit()
		return
	_label.text = lines[_index]
	_label.visible_ratio = 0.0
	if _tween:
		_tween.kill()
	_tween = create_tween()
	_tween.tween_property(_label, "visible_ratio", 1.0, lines[_index].length() / characters_per_second)
	_tween.finished.connect(func(): line_finished.emit(), CONNECT_ONE_SHOT)


func _gui_input(event: InputEvent) -> void:
	if event is InputEventMouseButton and event.pressed:
		_index += 1
		_show_line()
