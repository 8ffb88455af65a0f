class_name Charger
extends Enemy

## A walker that creeps along for a moment and then rushes forward.

@export var wind_up_time := 1.5
@export var charge_multiplier := 2.5

var _base_speed := 0.0


func _ready() -> void:
	super()
	sprite.modulate = Color(1.0, 0.6, 0.25)
	_base_speed = speed
	speed = _base_speed * 0.5
	get_tree().create_timer(wind_up_time).timeout.connect(_start_charge)


func _start_charge() -> void:
	speed = _base_speed * charge_multiplier
