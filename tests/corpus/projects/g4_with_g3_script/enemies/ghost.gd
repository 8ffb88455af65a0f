extends KinematicBody2D

export var speed = 60
export(NodePath) var target_path
onready var target = get_node(target_path)

var health = 3 setget set_health


func _physics_process(delta):
	if target == null:
		return
	var dir = (target.global_position - global_position).normalized()
	move_and_slide(dir * speed)


func set_health(value):
	health = value
	if health <= 0:
		$AnimationPlayer.play("die")
		yield($AnimationPlayer, "animation_finished")
		queue_free()
