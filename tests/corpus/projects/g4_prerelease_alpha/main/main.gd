extends Node2D

@export var orbit_scene: PackedScene
@onready var spawn := $Spawn as Node2D

var score := 0


func _ready() -> void:
	for i in 3:
		var orbit := orbit_scene.instantiate()
		orbit.position = spawn.position + Vector2(0, -220 * i)
		orbit.captured.connect(_on_captured)
		add_child(orbit)


func _on_captured(points: int) -> void:
	score += points
	await get_tree().create_timer(0.2).timeout
	print("score %d" % score)
