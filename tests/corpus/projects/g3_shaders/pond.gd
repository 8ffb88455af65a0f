extends Spatial

export var wave_height := 0.1

onready var water: MeshInstance = $Water


func _ready():
	water.get_surface_material(0).set_shader_param("wave_height", wave_height)
