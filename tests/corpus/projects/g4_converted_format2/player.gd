extends CharacterBody2D

signal died

@export var speed := 180.0
@export var jump_velocity := -320.0
@onready var sprite: AnimatedSprite2D = $AnimatedSprite2D

var gravity: float = ProjectSettings.get_setting("physics/2d/default_gravity")


func _physics_process(delta: float) -> void:
	if not is_on_floor():
		velocity.y += gravity * delta
	if Input.is_action_just_pressed("jump") and is_on_floor():
		velocity.y = jump_velocity
	var direction := Input.get_axis("ui_left", "ui_right")
	velocity.x = direction * speed
	move_and_slide()
	_update_animation(direction)


func _update_animation(direction: float) -> void:
	if direction != 0.0:
		sprite.flip_h = direction < 0.0
		sprite.play("run")
	else:
		sprite.play("idle")


func hurt() -> void:
	set_physics_process(false)
	await get_tree().create_timer(0.5).timeout
	died.emit()
