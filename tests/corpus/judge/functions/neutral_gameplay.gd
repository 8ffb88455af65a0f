extends Node2D

const TILE_SIZE = 16
const MAX_SPEED = 300.0

var score = 0
var combo = 0
var high_scores = []


func add_points(amount):
	combo += 1
	score += amount * combo


func reset_combo():
	combo = 0


func tile_to_world(tile):
	return Vector2(tile.x * TILE_SIZE, tile.y * TILE_SIZE) + Vector2(TILE_SIZE, TILE_SIZE) / 2


func world_to_tile(pos):
	return Vector2(floor(pos.x / TILE_SIZE), floor(pos.y / TILE_SIZE))


func accelerate(velocity, direction, delta):
	velocity += direction * 900.0 * delta
	if velocity.length() > MAX_SPEED:
		velocity = velocity.normalized() * MAX_SPEED
	return velocity


func apply_friction(velocity, delta):
	return velocity.move_toward(Vector2.ZERO, 600.0 * delta)


func record_score():
	high_scores.append(score)
	high_scores.sort()
	high_scores.invert()
	if high_scores.size() > 10:
		high_scores.resize(10)


func is_new_record():
	return high_scores.empty() or score > high_scores[0]


func _process(delta):
	$Label.text = "Score: %d  x%d" % [score, combo]
	rotation += 0.5 * delta


func _on_Coin_collected(value):
	add_points(value)
	$CoinSound.play()


func spawn_enemies(count):
	for i in range(count):
		var e = $EnemyTemplate.duplicate()
		e.position = Vector2(randi() % 640, -32)
		add_child(e)


func pause_game(paused):
	get_tree().paused = paused
	$PauseMenu.visible = paused


func find_closest(nodes):
	var best = null
	var best_dist = INF
	for n in nodes:
		var d = global_position.distance_squared_to(n.global_position)
		if d < best_dist:
			best_dist = d
			best = n
	return best


func _on_Timer_timeout():
	if combo > 0:
		combo -= 1


func grid_neighbors(cell):
	var result = []
	for offset in [Vector2.LEFT, Vector2.RIGHT, Vector2.UP, Vector2.DOWN]:
		result.append(cell + offset)
	return result


func quit_to_menu():
	get_tree().paused = false
	get_tree().change_scene_to(load("res://menu.tscn"))
