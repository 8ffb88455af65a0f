extends Node3D

@export var wave_height := 0.1

@onready var water: MeshInstance3D = $Water


func _ready() -> void:
	water.get_surface_override_material(0).set_shader_parameter("wave_height", wave_height)
