extends CanvasLayer

@onready var label: Label = $Label


func update_coins(total: int) -> void:
	label.text = "Coins: %d" % total


func flash() -> void:
	var tween := create_tween()
	tween.tween_property(label, "modulate", Color.WHITE, 0.3).from(Color.YELLOW)
