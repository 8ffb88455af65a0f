extends GrooveJoint2D


func randomize_rail(rng: RandomNumberGenerator) -> void:
	set_length(rng.randf_range(10.0, 60.0))
	set_initial_offset(rng.randf_range(0.0, 10.0))


func _process(delta):
	if Input.is_action_just_pressed("ui_accept"):
		set_length(length * 1.1)
