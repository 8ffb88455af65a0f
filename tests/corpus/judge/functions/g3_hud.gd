extends CanvasLayer

signal start_game

onready var score_label = $ScoreLabel
onready var message = $Message
onready var start_button = $StartButton


func show_message(text):
	message.text = text
	message.show()
	$MessageTimer.start()


func show_game_over():
	show_message("Game Over")
	yield($MessageTimer, "timeout")
	message.text = "Dodge the\nCreeps!"
	message.show()
	yield(get_tree().create_timer(1), "timeout")
	start_button.show()


func update_score(score):
	score_label.text = str(score)


func _on_StartButton_pressed():
	start_button.hide()
	emit_signal("start_game")


func _on_MessageTimer_timeout():
	message.hide()


func layout_for(viewport_size):
	score_label.rect_position = Vector2(viewport_size.x / 2 - 40, 8)
	start_button.rect_min_size = Vector2(200, 64)


func set_button_font(font):
	start_button.add_font_override("font", font)
	score_label.add_color_override("font_color", Color(1, 1, 1))


func fade_in_message():
	$Tween.interpolate_property(message, "modulate:a", 0.0, 1.0, 0.4, Tween.TRANS_SINE, Tween.EASE_OUT)
	$Tween.start()


func center_message():
	message.align = Label.ALIGN_CENTER
	message.valign = Label.VALIGN_CENTER


func pulse_score():
	var tween = create_tween()
	tween.tween_property(score_label, "modulate", Color(1, 1, 0.3), 0.1)
	tween.tween_property(score_label, "modulate", Color(1, 1, 1), 0.2)


func format_time(seconds):
	var minutes = int(seconds) / 60
	var rest = int(seconds) % 60
	return "%02d:%02d" % [minutes, rest]
