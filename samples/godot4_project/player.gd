class_name Player
extends CharacterBody2D

## Emitted when an enemy touches the player. main.gd turns it into lost health.
signal hurt(amount: int)

@export var speed := 200.0
@export var jump_velocity := -420.0
@export var invincibility_time := 0.8

var invincible := false

@onready var sprite: Sprite2D = $Sprite2D


func _physics_process(delta: float) -> void:
	if not is_on_floor():
		velocity.y += GameState.GRAVITY * delta

	if is_on_floor() and Input.is_action_just_pressed(&"jump"):
		velocity.y = jump_velocity

	var direction := Input.get_axis(&"move_left", &"move_right")
	velocity.x = direction * speed
	move_and_slide()

	if not is_zero_approx(direction):
		sprite.flip_h = direction < 0.0


func take_damage(amount: int) -> void:
	# Short grace period after a hit so one enemy can't drain all the health.
	if invincible:
		return
	invincible = true
	hurt.emit(amount)
	sprite.modulate = Color(1.0, 0.4, 0.4)
	get_tree().create_timer(invincibility_time).timeout.connect(_end_invincibility)


func _end_invincibility() -> void:
	invincible = false
	sprite.modulate = Color.WHITE
