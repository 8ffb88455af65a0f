extends CharacterBody3D

@export var mouse_sensitivity := 0.002
@export var move_speed := 6.0

@onready var head: Node3D = $Head
@onready var camera: Camera3D = $Head/Camera3D
@onready var ray: RayCast3D = $Head/Camera3D/RayCast3D


func _ready() -> void:
	Input.mouse_mode = Input.MOUSE_MODE_CAPTURED


func _input(event: InputEvent) -> void:
	if event is InputEventMouseMotion:
		rotate_y(-event.relative.x * mouse_sensitivity)
		head.rotate_x(-event.relative.y * mouse_sensitivity)
		head.rotation.x = clampf(head.rotation.x, deg_to_rad(-89), deg_to_rad(89))


func _physics_process(delta: float) -> void:
	var input_dir := Input.get_vector("left", "right", "forward", "back")
	var direction := (transform.basis * Vector3(input_dir.x, 0, input_dir.y)).normalized()
	velocity.x = direction.x * move_speed
	velocity.z = direction.z * move_speed
	if not is_on_floor():
		velocity += get_gravity() * delta
	move_and_slide()


func teleport(target: Node3D) -> void:
	position = target.position
	rotation_degrees.y = target.rotation_degrees.y


func look_target() -> RigidBody3D:
	if ray.is_colliding():
		var hit := ray.get_collider()
		if hit is RigidBody3D:
			return hit
	return null


func place_marker(point: Vector3) -> void:
	var marker := Marker3D.new()
	marker.position = point
	get_tree().current_scene.add_child(marker)


func aim_transform() -> Transform3D:
	var t := Transform3D()
	t.origin = camera.global_transform.origin
	return t.looking_at(camera.global_transform.origin - camera.global_transform.basis.z, Vector3.UP)


func cast_from_camera(screen_point: Vector2) -> Dictionary:
	var from := camera.project_ray_origin(screen_point)
	var to := from + camera.project_ray_normal(screen_point) * 100.0
	var query := PhysicsRayQueryParameters3D.create(from, to, 0xFFFFFFFF, [get_rid()])
	return get_world_3d().direct_space_state.intersect_ray(query)


func heading_degrees() -> float:
	return fposmod(rotation_degrees.y, 360.0)


func nearby_bodies(radius: float) -> Array[Node3D]:
	var found: Array[Node3D] = []
	for body in get_tree().get_nodes_in_group("bodies"):
		if body.global_position.distance_to(global_position) < radius:
			found.append(body)
	return found
