extends CanvasLayer

signal start_game

@onready var score_label: Label = $ScoreLabel
@onready var message: Label = $Message
@onready var start_button: Button = $StartButton


func show_message(text: String) -> void:
	message.text = text
	message.show()
	$MessageTimer.start()


func show_game_over() -> void:
	show_message("Game Over")
	await $MessageTimer.timeout
	message.text = "Dodge the\nCreeps!"
	message.show()
	await get_tree().create_timer(1.0).timeout
	start_button.show()


func update_score(score: int) -> void:
	score_label.text = str(score)


func _on_start_button_pressed() -> void:
	start_button.hide()
	start_game.emit()


func layout_for(viewport_size: Vector2) -> void:
	score_label.position = Vector2(viewport_size.x / 2 - 40, 8)
	start_button.custom_minimum_size = Vector2(200, 64)


func set_button_font(font: Font) -> void:
	start_button.add_theme_font_override("font", font)
	score_label.add_theme_color_override("font_color", Color(1, 1, 1))


func fade_in_message() -> void:
	var tween := create_tween()
	tween.tween_property(message, "modulate:a", 1.0, 0.4).from(0.0).set_trans(Tween.TRANS_SINE)
	tween.tween_callback(func(): message.show())


func center_message() -> void:
	message.horizontal_alignment = HORIZONTAL_ALIGNMENT_CENTER
	message.vertical_alignment = VERTICAL_ALIGNMENT_CENTER


func bind_buttons(buttons: Array[Button]) -> void:
	for b in buttons:
		b.pressed.connect(_on_any_pressed.bind(b))


func _on_any_pressed(button: Button) -> void:
	print("pressed ", button.name)


func flash_label() -> void:
	score_label.label_settings.font_color = Color.YELLOW
	await get_tree().process_frame
	score_label.label_settings.font_color = Color.WHITE
