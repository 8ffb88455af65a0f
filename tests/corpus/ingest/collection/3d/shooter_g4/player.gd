class_name Shooter
extends CharacterBody3D

signal fired(amount: int)

@export var speed := 6.0
@onready var camera: Camera3D = $Camera3D


func _physics_process(delta: float) -> void:
	var input := Input.get_vector(&"move_left", &"move_right", &"move_forward", &"move_back")
	velocity = Vector3(input.x, 0, input.y) * speed
	move_and_slide()
	if Input.is_action_just_pressed(&"shoot"):
		fired.emit(1)
