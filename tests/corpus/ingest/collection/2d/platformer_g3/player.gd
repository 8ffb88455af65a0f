extends KinematicBody2D

export var speed = 200
onready var sprite = $Sprite

var velocity = Vector2()


func _physics_process(delta):
	velocity.x = Input.get_action_strength("ui_right") - Input.get_action_strength("ui_left")
	velocity = move_and_slide(velocity * speed, Vector2.UP)
	if Input.is_action_just_pressed("jump"):
		yield(get_tree().create_timer(0.1), "timeout")
		emit_signal("jumped")
