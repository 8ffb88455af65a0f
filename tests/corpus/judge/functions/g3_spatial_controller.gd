extends KinematicBody

export var mouse_sensitivity = 0.002
export var move_speed = 6.0

onready var head = $Head
onready var camera = $Head/Camera
onready var ray = $Head/Camera/RayCast

var velocity = Vector3()


func _ready():
	Input.set_mouse_mode(Input.MOUSE_MODE_CAPTURED)


func _input(event):
	if event is InputEventMouseMotion:
		rotate_y(-event.relative.x * mouse_sensitivity)
		head.rotate_x(-event.relative.y * mouse_sensitivity)
		head.rotation.x = clamp(head.rotation.x, deg2rad(-89), deg2rad(89))


func _physics_process(delta):
	var input = Vector3()
	if Input.is_action_pressed("forward"):
		input -= transform.basis.z
	if Input.is_action_pressed("back"):
		input += transform.basis.z
	velocity.x = input.normalized().x * move_speed
	velocity.z = input.normalized().z * move_speed
	velocity.y -= 9.8 * delta
	velocity = move_and_slide(velocity, Vector3.UP)


func teleport(target):
	translation = target.translation
	rotation_degrees.y = target.rotation_degrees.y


func look_target():
	if ray.is_colliding():
		var hit = ray.get_collider()
		if hit is RigidBody:
			return hit
	return null


func place_marker(point):
	var marker = Spatial.new()
	marker.translation = point
	get_tree().current_scene.add_child(marker)


func aim_transform():
	var t = Transform()
	t.origin = camera.global_transform.origin
	return t.looking_at(camera.global_transform.origin - camera.global_transform.basis.z, Vector3.UP)


func cast_from_camera(screen_point):
	var from = camera.project_ray_origin(screen_point)
	var to = from + camera.project_ray_normal(screen_point) * 100.0
	var space = get_world().direct_space_state
	return space.intersect_ray(from, to, [self])


func heading_degrees():
	return fposmod(rotation_degrees.y, 360.0)


func spin(delta):
	rotate_y(delta * 0.5)
	orthonormalize()
