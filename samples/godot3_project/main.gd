extends Node2D

# Runs a single attempt: spawns walkers, tracks the player's health and the
# survival time, saves the best time and restarts the level on death.

signal died

const SAVE_PATH = "user://best_time.save"

export(float, 0.0, 1.0) var flip_chance = 0.5

var health = 100 setget set_health, get_health
var start_time = 0
var game_over = false

onready var player = $Player
onready var hud = $HUD


func _ready():
	randomize()
	start_time = OS.get_ticks_msec()

	if Globals.attempts == 0:
		Globals.best_time = _load_best_time()
	Globals.attempts += 1

	$KillZone.connect("body_entered", self, "_on_body_entered")
	player.connect("hurt", self, "_on_player_hurt")
	connect("died", self, "_on_died")
	hud.update_health(health)


func set_health(value):
	health = clamp(value, 0, 100)
	hud.update_health(health)
	if health == 0 and not game_over:
		emit_signal("died")


func get_health():
	return health


func _on_body_entered(body):
	# Only the player is on the kill zone's mask, but check anyway.
	if body == player:
		self.health = 0


func _on_player_hurt(amount):
	self.health -= amount


func _on_SpawnTimer_timeout():
	var enemy = preload("res://enemy.tscn").instance()
	enemy.position = Vector2(rand_range(64, 960), -32)
	if rand_range(0, 1) < flip_chance:
		enemy.direction = -1
	$Enemies.add_child(enemy)


func _on_died():
	game_over = true
	player.set_physics_process(false)
	$SpawnTimer.stop()

	var elapsed = (OS.get_ticks_msec() - start_time) / 1000.0
	if elapsed > Globals.best_time:
		Globals.best_time = elapsed
		_save_best_time(elapsed)

	hud.show_message("Game Over\nBest: %.1f s" % Globals.best_time)
	yield(get_tree().create_timer(1.0), "timeout")
	get_tree().change_scene("res://main.tscn")


func _load_best_time():
	var file = File.new()
	if not file.file_exists(SAVE_PATH):
		return 0.0
	if file.open(SAVE_PATH, File.READ) != OK:
		return 0.0
	var value = file.get_float()
	file.close()
	return value


func _save_best_time(value):
	var file = File.new()
	var err = file.open(SAVE_PATH, File.WRITE)
	if err != OK:
		push_warning("Could not save the best time (error %d)" % err)
		return
	file.store_float(value)
	file.close()
