extends Control

signal dialogue_finished

var lines = []
var index = 0
onready var label = $Panel/RichTextLabel
onready var timer = $TypeTimer


func start(new_lines):
	lines = new_lines
	index = 0
	show()
	_show_line()


func _show_line():
	label.bbcode_text = lines[index]
	label.percent_visible = 0
	timer.start()


func _on_TypeTimer_timeout():
	label.percent_visible += 0.05
	if label.percent_visible >= 1.0:
		timer.stop()


func _input(event):
	if event.is_action_pressed("ui_accept"):
		get_tree().set_input_as_handled()
		advance()


func advance():
	index += 1
	if index >= lines.size():
		hide()
		emit_signal("dialogue_finished")
	else:
		_show_line()


func load_lines(path):
	var f = File.new()
	f.open(path, File.READ)
	var result = []
	while not f.eof_reached():
		result.append(f.get_line())
	f.close()
	return result


func speaker_color(name):
	match name:
		"hero":
			return Color.cornflower
		_:
			return Color(1, 1, 1)
