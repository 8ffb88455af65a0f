extends CharacterBody2D

signal health_changed(new_health: int)
signal died

@export var speed := 220.0
@export var jump_force := 420.0
@export_range(0, 2000) var gravity: float = 980.0
@onready var sprite: Sprite2D = $Sprite2D
@onready var anim: AnimationPlayer = $AnimationPlayer

var health := 3:
	set(value):
		health = clampi(value, 0, 3)
		health_changed.emit(health)


func _ready() -> void:
	$Hurtbox.area_entered.connect(_on_hurtbox_area_entered)
	anim.play(&"idle")


func _physics_process(delta: float) -> void:
	velocity.y += gravity * delta
	var direction := Input.get_axis("move_left", "move_right")
	velocity.x = direction * speed
	if is_on_floor() and Input.is_action_just_pressed("jump"):
		velocity.y = -jump_force
	move_and_slide()
	_update_animation(direction)


func _update_animation(direction: float) -> void:
	if direction != 0:
		sprite.flip_h = direction < 0
	if not is_on_floor():
		anim.play("jump")
	elif absf(velocity.x) > 10.0:
		anim.play("run")
	else:
		anim.play("idle")


func take_damage(amount: int) -> void:
	health -= amount
	modulate = Color(1, 0.4, 0.4)
	await get_tree().create_timer(0.2).timeout
	modulate = Color.WHITE


func _on_hurtbox_area_entered(area: Area2D) -> void:
	if area.is_in_group("enemy_attack"):
		take_damage(1)


func spawn_dust() -> void:
	var dust := preload("res://effects/dust.tscn").instantiate()
	dust.global_position = global_position + Vector2(0, 12)
	get_parent().add_child(dust)


func _unhandled_input(event: InputEvent) -> void:
	if event is InputEventKey and event.pressed and event.keycode == KEY_R:
		get_tree().reload_current_scene()


func die() -> void:
	set_physics_process(false)
	anim.play("die")
	await anim.animation_finished
	died.emit()
	queue_free()


func face_towards(target_position: Vector2) -> void:
	sprite.flip_h = target_position.x < global_position.x


func knockback(from: Vector2) -> void:
	velocity = (global_position - from).normalized() * 300.0
	floor_snap_length = 0.0
	move_and_slide()
