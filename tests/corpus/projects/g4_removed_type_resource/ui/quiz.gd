extends Control

signal answered(correct: bool)

@export var questions: Array[String] = []
var _index := 0

@onready var _label: Label = %QuestionLabel


func _ready() -> void:
	_show_question()


func _show_question() -> void:
	if _index >= questions.size():
		_label.text = "Done!"
		return
	_label.text = questions[_index]


func _on_answer_pressed(correct: bool) -> void:
	answered.emit(correct)
	_index += 1
	_show_question()
