extends KinematicBody2D

signal coin_collected(total)

export var speed = 220.0
export var jump_speed = 420.0
const UP = Vector2(0, -1)

var velocity = Vector2()
var coins = 0
onready var sprite = $Sprite


func _physics_process(delta):
	velocity.y += 900 * delta
	velocity.x = (Input.get_action_strength("ui_right") - Input.get_action_strength("ui_left")) * speed
	if is_on_floor() and Input.is_action_just_pressed("jump"):
		velocity.y = -jump_speed
	velocity = move_and_slide(velocity, UP)
	sprite.flip_h = velocity.x < 0


func collect():
	coins += 1
	emit_signal("coin_collected", coins)
