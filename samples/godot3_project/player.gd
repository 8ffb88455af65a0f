extends KinematicBody2D

signal hurt(amount)

export var speed = 200
export var jump_speed = 420

var velocity = Vector2.ZERO
var invincible = false

onready var sprite = $Sprite


func _physics_process(delta):
	var direction = Input.get_action_strength("move_right") - Input.get_action_strength("move_left")
	velocity.x = direction * speed
	velocity.y += Globals.GRAVITY * delta

	if is_on_floor() and Input.is_action_just_pressed("jump"):
		velocity.y = -jump_speed

	velocity = move_and_slide(velocity, Vector2.UP)

	if direction != 0:
		sprite.flip_h = direction < 0


func take_damage(amount):
	# Short grace period after a hit so one enemy can't drain all the health.
	if invincible:
		return
	invincible = true
	emit_signal("hurt", amount)
	sprite.modulate = Color(1, 0.4, 0.4)
	get_tree().create_timer(0.8).connect("timeout", self, "_end_invincibility")


func _end_invincibility():
	invincible = false
	sprite.modulate = Color.white
