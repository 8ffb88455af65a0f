extends KinematicBody2D

signal health_changed(new_health)
signal died

const UP = Vector2.UP
const SNAP = Vector2(0, 16)

export var speed := 220.0
export var jump_force := 420.0
export(float, 0, 2000) var gravity = 980.0
onready var sprite = $Sprite
onready var anim = $AnimationPlayer

var velocity = Vector2.ZERO
var health = 3 setget set_health
var is_jumping = false


func _ready():
	$Hurtbox.connect("area_entered", self, "_on_Hurtbox_area_entered")
	anim.play("idle")


func _physics_process(delta):
	velocity.y += gravity * delta
	var direction = Input.get_action_strength("move_right") - Input.get_action_strength("move_left")
	velocity.x = direction * speed
	if is_on_floor() and Input.is_action_just_pressed("jump"):
		velocity.y = -jump_force
		is_jumping = true
	velocity = move_and_slide(velocity, UP)
	_update_animation(direction)


func _update_animation(direction):
	if direction != 0:
		sprite.flip_h = direction < 0
	if not is_on_floor():
		anim.play("jump")
	elif abs(velocity.x) > 10.0:
		anim.play("run")
	else:
		anim.play("idle")


func snap_to_floor(delta):
	velocity.y += gravity * delta
	velocity = move_and_slide_with_snap(velocity, SNAP, UP, true)


func set_health(value):
	health = clamp(value, 0, 3)
	emit_signal("health_changed", health)
	if health == 0:
		emit_signal("died")


func take_damage(amount):
	set_health(health - amount)
	modulate = Color(1, 0.4, 0.4)
	yield(get_tree().create_timer(0.2), "timeout")
	modulate = Color.white


func _on_Hurtbox_area_entered(area):
	if area.is_in_group("enemy_attack"):
		take_damage(1)


func spawn_dust():
	var dust = preload("res://effects/Dust.tscn").instance()
	dust.global_position = global_position + Vector2(0, 12)
	get_parent().add_child(dust)


func _unhandled_input(event):
	if event is InputEventKey and event.pressed and event.scancode == KEY_R:
		get_tree().reload_current_scene()


func face_towards(target_position):
	sprite.flip_h = target_position.x < global_position.x


func die():
	set_physics_process(false)
	anim.play("die")
	yield(anim, "animation_finished")
	queue_free()
