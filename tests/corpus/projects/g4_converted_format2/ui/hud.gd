extends CanvasLayer

@onready var label: Label = $ScoreLabel


func _ready() -> void:
	Score.score_changed.connect(func(value): label.text = str(value))


func show_game_over() -> void:
	$GameOver.show()
