extends Node2D

signal level_completed(time_taken)

var start_time = 0
var collected = 0
var total = 0


func _ready():
	start_time = Time.get_ticks_msec()
	total = get_tree().get_nodes_in_group("collectibles").size()
	$HUD.set_total(total)


func _on_collectible_picked(value):
	collected += 1
	$HUD.set_collected(collected)
	if collected == total:
		finish()


func finish():
	var taken = (Time.get_ticks_msec() - start_time) / 1000.0
	emit_signal("level_completed", taken)
	get_tree().paused = true


func respawn_player(player):
	player.global_position = $SpawnPoint.global_position
	player.show()


func _on_DeathZone_body_entered(body):
	if body.is_in_group("player"):
		respawn_player(body)


func bounce(node):
	var tween = create_tween()
	tween.tween_property(node, "scale", Vector2(1.2, 1.2), 0.1)
	tween.tween_property(node, "scale", Vector2.ONE, 0.1)


func unlock_door(door_name):
	var door = get_node_or_null("Doors/" + door_name)
	if door:
		door.open()


func enemy_count():
	return get_tree().get_nodes_in_group("enemies").size()
