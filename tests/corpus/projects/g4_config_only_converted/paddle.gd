extends KinematicBody2D

export var speed = 400


func _physics_process(delta):
	var dir = Input.get_action_strength("ui_right") - Input.get_action_strength("ui_left")
	move_and_collide(Vector2(dir * speed * delta, 0))
