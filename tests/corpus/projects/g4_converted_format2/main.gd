extends Node2D

@export var enemy_scene: PackedScene

@onready var hud = $HUD
@onready var spawn_timer: Timer = $SpawnTimer


func _ready() -> void:
	$Player.died.connect(_on_player_died)
	spawn_timer.timeout.connect(_spawn_enemy)
	Score.reset()


func _spawn_enemy() -> void:
	var enemy = enemy_scene.instantiate()
	enemy.position = Vector2(randf_range(40.0, 600.0), -20.0)
	add_child(enemy)


func _on_player_died() -> void:
	spawn_timer.stop()
	hud.show_game_over()
	await get_tree().create_timer(2.0).timeout
	get_tree().reload_current_scene()
