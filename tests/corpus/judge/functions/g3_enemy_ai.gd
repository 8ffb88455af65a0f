extends KinematicBody2D

enum State { IDLE, CHASE, ATTACK }

export(NodePath) var target_path
export(int, 1, 10) var damage = 2

var state = State.IDLE
var velocity = Vector2()
onready var target = get_node(target_path)
onready var detector = $Detector


func _ready():
	detector.connect("body_entered", self, "_on_body_entered", [detector])
	$AttackTimer.connect("timeout", self, "_on_attack")


func _physics_process(delta):
	match state:
		State.IDLE:
			velocity = Vector2.ZERO
		State.CHASE:
			velocity = (target.global_position - global_position).normalized() * 80
		State.ATTACK:
			velocity = Vector2.ZERO
	velocity = move_and_slide(velocity)


func _on_body_entered(body, area):
	if body.name == "Player":
		state = State.CHASE


func distance_to_target():
	return global_position.distance_to(target.global_position)


func choose_state():
	var d = distance_to_target()
	if d < 24:
		state = State.ATTACK
	elif d < 200:
		state = State.CHASE
	else:
		state = State.IDLE


func _on_attack():
	if state == State.ATTACK and target.has_method("take_damage"):
		target.take_damage(damage)


func flash():
	$Sprite.modulate = Color(1, 0, 0)
	yield(get_tree().create_timer(0.1), "timeout")
	$Sprite.modulate = Color(1, 1, 1)


func stop_listening():
	if detector.is_connected("body_entered", self, "_on_body_entered"):
		detector.disconnect("body_entered", self, "_on_body_entered")


func drop_loot():
	var coin = load("res://items/Coin.tscn").instance()
	coin.position = position
	get_parent().call_deferred("add_child", coin)
