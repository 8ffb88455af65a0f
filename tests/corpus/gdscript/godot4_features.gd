@tool
@icon("res://icons/turret.svg")
class_name Turret extends Node3D
## A turret that tracks targets.

signal target_acquired(target: Node3D, distance: float)
signal fired

enum Mode { MANUAL, AUTO }

const ROUNDS: Array[int] = [1, 2, 3]
const LOOKUP := {
	"slow": 0.5,
	"fast": 2.0,
}

@export_range(0.0, 10.0, 0.5) var fire_rate: float = 1.0
@export_enum("Manual", "Auto") var mode: int = Mode.MANUAL
@export var targets: Array[Node3D] = []
@onready var muzzle: Marker3D = %Muzzle
@onready var ray := $Pivot/RayCast3D as RayCast3D

var health: int = 100:
	set(value):
		health = clampi(value, 0, 100)
	get:
		return health
var ammo: int: set = _set_ammo, get = _get_ammo

static var instances := 0


static func create() -> Turret:
	var turret := Turret.new()
	instances += 1
	return turret


@rpc("any_peer", "call_local")
func fire() -> void:
	var tween := create_tween()
	tween.tween_property(muzzle, "scale", Vector3.ONE * 1.2, 0.1)
	await tween.finished
	fired.emit()


@warning_ignore("unused_parameter")
func _process(delta: float) -> void:
	var names: Array[StringName] = [&"idle", &"aim"]
	var path: NodePath = ^"Pivot/Barrel"
	var pick = func(items: Array) -> Variant:
		return items.pick_random()
	match mode:
		Mode.MANUAL:
			if Input.is_action_just_pressed(&"fire"):
				fire()
		Mode.AUTO when health > 50:
			super._process(delta)
		_:
			pass
	print(names, path, pick.call(targets))


func _ready() -> void:
	super()
	target_acquired.connect(_on_target_acquired)
	var timer := get_tree().create_timer(1.0 / fire_rate)
	await timer.timeout
	var settings := {
		"rate": fire_rate,
		"mode": mode,
	}
	print(settings, LOOKUP["fast"], ROUNDS.size())


func _on_target_acquired(target: Node3D, distance: float) -> void:
	if target is CharacterBody3D and distance < 10.0:
		look_at(target.global_position)


func _set_ammo(value: int) -> void:
	ammo = value


func _get_ammo() -> int:
	return ammo
