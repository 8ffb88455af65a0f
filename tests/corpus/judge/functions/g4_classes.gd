class_name Weapon
extends Node2D

signal fired(projectile: Node2D)

enum Mode { SINGLE, BURST }

@export var mode: Mode = Mode.SINGLE
@export var projectile_scene: PackedScene

static var total_shots := 0


func _init(start_mode: int = 0) -> void:
	mode = start_mode


func _ready() -> void:
	super()
	$Cooldown.timeout.connect(func(): can_fire = true)


var can_fire := true


func fire() -> void:
	if not can_fire:
		return
	var p := projectile_scene.instantiate() as Node2D
	p.global_position = global_position
	get_tree().current_scene.add_child(p)
	total_shots += 1
	fired.emit(p)
	can_fire = false
	$Cooldown.start()


func burst(count: int) -> void:
	for i: int in range(count):
		fire()
		await get_tree().create_timer(0.08).timeout


func describe() -> String:
	return "%s (%s)" % [name, Mode.keys()[mode]]


static func clamp_ammo(value: int) -> int:
	return int(clamp(value, 0, 99))


func _to_string() -> String:
	return "Weapon<%s>" % name


func targets_in(area: Area2D) -> Array[Node2D]:
	var result: Array[Node2D] = []
	result.assign(area.get_overlapping_bodies())
	return result


func _process(delta: float) -> void:
	rotation = lerp_angle(rotation, get_angle_to(get_global_mouse_position()), 10.0 * delta)


func is_weapon(node: Node) -> bool:
	return node is Weapon and node is not Projectile
