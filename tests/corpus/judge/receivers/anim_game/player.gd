extends KinematicBody2D

var velocity = Vector2()
var speed = 120.0


func start_animation():
	$AnimatedSprite.playing = true


func swap_frames(new_frames):
	$AnimatedSprite.frames = new_frames


func flip(left):
	get_node("Body/Sprite").flip_h = left


func _process(_delta):
	update()


func _draw():
	draw_circle(Vector2.ZERO, 4.0, Color(1, 0, 0))


func run(direction):
	velocity.x = direction * speed
