extends Node

signal score_changed(value: int)

var score := 0:
	set(value):
		score = value
		score_changed.emit(score)


func add(points: int) -> void:
	score += points


func reset() -> void:
	score = 0
