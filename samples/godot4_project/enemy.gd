class_name Enemy
extends CharacterBody2D

## Walks along a platform, turns around when it bumps into something and
## hurts the player on contact (through the Area2D hitbox).

@export var speed := 80.0
@export var damage := 25

var direction := 1

@onready var sprite: Sprite2D = $Sprite2D


func _ready() -> void:
	sprite.flip_h = direction < 0


func _physics_process(delta: float) -> void:
	velocity.x = speed * direction
	velocity.y += GameState.GRAVITY * delta
	move_and_slide()

	if is_on_wall():
		direction *= -1
		sprite.flip_h = direction < 0

	# Fell through the gap, nobody will ever see it again.
	if position.y > 800.0:
		queue_free()


func _on_body_entered(body: Node2D) -> void:
	if body is Player:
		body.take_damage(damage)
