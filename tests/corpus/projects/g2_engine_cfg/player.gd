extends RigidBody2D

var anim = ""
var siding_left = false
onready var sprite = get_node("sprite")
export var speed = 200

func _integrate_forces(s):
	var lv = s.get_linear_velocity()
	var step = s.get_step()
	var move_left = Input.is_action_pressed("move_left")
	if (move_left):
		lv.x -= speed * step
	s.set_linear_velocity(lv)

func _ready():
	set_fixed_process(true)
	set_process_input(true)

func _fixed_process(delta):
	var pos = get_pos()
	set_pos(pos + Vector2(1, 0))
	get_node("anim").play("run")
	if get_node("sprite").is_flipped_h():
		sprite.set_opacity(0.5)
