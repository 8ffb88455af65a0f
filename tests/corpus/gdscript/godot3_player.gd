tool
extends KinematicBody2D
class_name Hero, "res://icons/hero.svg"

# Emitted when the hero takes damage.
signal damaged(amount, source)
signal died

enum State { IDLE, RUN, JUMP }
const GRAVITY = 980.0
const Bullet = preload("res://scenes/bullet.tscn")

export(int, 0, 10) var lives = 3 setget set_lives, get_lives
export(PackedScene) var weapon_scene
export var speed = 200.0
onready var sprite = $Sprite
onready var anim: AnimationPlayer = get_node("AnimationPlayer")
var velocity = Vector2()
var state = State.IDLE

puppet var puppet_position = Vector2()


func _ready():
	connect("damaged", self, "_on_damaged")
	$Timer.connect("timeout", self, "_on_timer_timeout")
	yield(get_tree().create_timer(0.5), "timeout")
	OS.set_window_title("Hero")


func _physics_process(delta):
	velocity.y += GRAVITY * delta
	if Input.is_action_pressed("ui_right"):
		velocity.x = speed
	velocity = move_and_slide(velocity, Vector2.UP)
	if is_on_floor() and Input.is_action_just_pressed("jump"):
		state = State.JUMP
	sprite.flip_h = velocity.x < 0


remote func shoot(direction):
	var bullet = Bullet.instance()
	bullet.rotation = direction.angle()
	get_parent().add_child(bullet)
	emit_signal("damaged", 1, self)


func set_lives(value):
	lives = clamp(value, 0, 10)
	if lives == 0:
		emit_signal("died")
		get_tree().change_scene("res://scenes/game_over.tscn")


func get_lives():
	return lives


func _on_damaged(amount, source):
	.take_damage(amount)
	var spread = rand_range(-0.1, 0.1)
	var elapsed = OS.get_ticks_msec()
	print(str(amount) + " from " + str(source), spread, elapsed)
