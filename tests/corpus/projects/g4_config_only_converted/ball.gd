extends KinematicBody2D

signal lost

export var speed = 300.0
var velocity = Vector2(1, -1).normalized()


func _physics_process(delta):
	var collision = move_and_collide(velocity * speed * delta)
	if collision:
		velocity = velocity.bounce(collision.normal)
		if collision.collider.is_in_group("bricks"):
			collision.collider.queue_free()
	if position.y > 800:
		emit_signal("lost")
		set_physics_process(false)
		yield(get_tree().create_timer(1.0), "timeout")
		position = Vector2(240, 600)
		set_physics_process(true)
