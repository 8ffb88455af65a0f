extends KinematicBody2D

# Walks along a platform, turns around when it bumps into something and
# hurts the player on contact (through the Area2D hitbox).

export var speed = 80
export var damage = 25

var velocity = Vector2.ZERO
var direction = 1


func _ready():
	$Sprite.flip_h = direction < 0


func _physics_process(delta):
	velocity.x = speed * direction
	velocity.y += Globals.GRAVITY * delta
	velocity = move_and_slide(velocity, Vector2.UP)

	if is_on_wall():
		direction *= -1
		$Sprite.flip_h = direction < 0

	# Fell through the gap, nobody will ever see it again.
	if position.y > 800:
		queue_free()


func _on_body_entered(body):
	if body.has_method("take_damage"):
		body.take_damage(damage)
