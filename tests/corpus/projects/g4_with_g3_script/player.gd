extends CharacterBody2D

@export var speed := 200.0
@onready var anim: AnimationPlayer = $AnimationPlayer


func _physics_process(_delta: float) -> void:
	var input := Input.get_vector("ui_left", "ui_right", "ui_up", "ui_down")
	velocity = input * speed
	move_and_slide()


func take_hit() -> void:
	anim.play("hit")
	await anim.animation_finished
	anim.play("idle")
