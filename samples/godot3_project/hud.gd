extends CanvasLayer

# Health readout, run timer and the game over banner.

var elapsed = 0.0

onready var health_bar = $HealthBar
onready var message = $Message


func _ready():
	# Keep the bar and the banner readable even if the theme font changes.
	health_bar.rect_min_size = Vector2(200, 20)
	message.rect_min_size = Vector2(240, 60)
	message.hide()


func _process(delta):
	elapsed += delta
	$TimeLabel.text = "%.1f s" % elapsed


func update_health(value):
	$Label.text = "HP: %d" % value
	health_bar.value = value


func show_message(text):
	message.text = text
	message.show()
	# Freeze the timer on the final time.
	set_process(false)
