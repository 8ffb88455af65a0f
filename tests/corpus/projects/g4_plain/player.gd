class_name Player
extends CharacterBody2D

signal coin_collected(total: int)

@export var speed := 220.0
@export var jump_speed := 420.0

var coins := 0
@onready var sprite: Sprite2D = $Sprite2D


func _physics_process(delta: float) -> void:
	velocity += get_gravity() * delta
	velocity.x = Input.get_axis("ui_left", "ui_right") * speed
	if is_on_floor() and Input.is_action_just_pressed("jump"):
		velocity.y = -jump_speed
	move_and_slide()
	sprite.flip_h = velocity.x < 0


func collect() -> void:
	coins += 1
	coin_collected.emit(coins)
