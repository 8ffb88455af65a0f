extends CanvasLayer

onready var label = $Label


func update_coins(total):
	label.text = "Coins: %d" % total


func flash():
	var tween = get_node("Tween")
	tween.interpolate_property(label, "modulate", Color(1, 1, 0), Color(1, 1, 1), 0.3)
	tween.start()
