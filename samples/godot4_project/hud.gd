class_name HUD
extends CanvasLayer

## Health readout, run timer and the game over banner.

var elapsed := 0.0

@onready var health_bar: ProgressBar = $HealthBar
@onready var message: Label = $Message


func _ready() -> void:
	# Keep the bar and the banner readable even if the theme font changes.
	health_bar.custom_minimum_size = Vector2(200, 20)
	message.custom_minimum_size = Vector2(240, 60)
	message.hide()


func _process(delta: float) -> void:
	elapsed += delta
	$TimeLabel.text = "%.1f s" % elapsed


func update_health(value: int) -> void:
	$Label.text = "HP: %d" % value
	health_bar.value = value


func show_message(text: String) -> void:
	message.text = text
	message.show()
	# Freeze the timer on the final time.
	set_process(false)
