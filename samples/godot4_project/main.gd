extends Node2D

## Runs a single attempt: spawns walkers, tracks the player's health and the
## survival time, saves the best time and restarts the level on death.

signal died

const SAVE_PATH := "user://best_time.save"

@export_range(0.0, 1.0) var charger_chance := 0.25
@export_range(0.0, 1.0) var flip_chance := 0.5

var health: int = 100:
	set(value):
		health = clampi(value, 0, 100)
		if is_node_ready():
			hud.update_health(health)
		if health == 0 and not game_over:
			died.emit()
	get:
		return health

var enemies: Array[Node2D] = []
var start_time := 0
var game_over := false

@onready var player: Player = $Player
@onready var hud: HUD = $HUD


func _ready() -> void:
	start_time = Time.get_ticks_msec()

	if GameState.attempts == 0:
		GameState.best_time = _load_best_time()
	GameState.attempts += 1

	$KillZone.body_entered.connect(_on_body_entered)
	player.hurt.connect(_on_player_hurt)
	died.connect(_on_died)
	hud.update_health(health)


func _on_body_entered(body: Node2D) -> void:
	# Only the player is on the kill zone's mask, but check anyway.
	if body == player:
		health = 0


func _on_player_hurt(amount: int) -> void:
	health -= amount


func _on_spawn_timer_timeout() -> void:
	var enemy: Enemy
	if randf_range(0, 1) < charger_chance:
		enemy = preload("res://charger.tscn").instantiate()
	else:
		enemy = preload("res://enemy.tscn").instantiate()
	enemy.position = Vector2(randf_range(64, 960), -32)
	if randf_range(0, 1) < flip_chance:
		enemy.direction = -1
	$Enemies.add_child(enemy)

	enemies.append(enemy)
	enemy.tree_exiting.connect(func() -> void: enemies.erase(enemy))


func _on_died() -> void:
	game_over = true
	player.set_physics_process(false)
	$SpawnTimer.stop()
	for enemy in enemies:
		enemy.set_physics_process(false)

	var elapsed := (Time.get_ticks_msec() - start_time) / 1000.0
	if elapsed > GameState.best_time:
		GameState.best_time = elapsed
		_save_best_time(elapsed)

	hud.show_message("Game Over\nBest: %.1f s" % GameState.best_time)
	await get_tree().create_timer(1.0).timeout
	get_tree().change_scene_to_file("res://main.tscn")


func _load_best_time() -> float:
	if not FileAccess.file_exists(SAVE_PATH):
		return 0.0
	var file := FileAccess.open(SAVE_PATH, FileAccess.READ)
	if file == null:
		return 0.0
	return file.get_float()


func _save_best_time(value: float) -> void:
	var file := FileAccess.open(SAVE_PATH, FileAccess.WRITE)
	if file == null:
		push_warning("Could not save the best time: %s" % error_string(FileAccess.get_open_error()))
		return
	file.store_float(value)
