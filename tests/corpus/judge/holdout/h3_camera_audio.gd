extends Camera2D

export var follow_speed = 5.0
export(NodePath) var target_path

onready var target = get_node(target_path)
var shake_amount = 0.0


func _process(delta):
	if target:
		global_position = global_position.linear_interpolate(target.global_position, follow_speed * delta)
	if shake_amount > 0:
		offset = Vector2(rand_range(-1, 1), rand_range(-1, 1)) * shake_amount
		shake_amount = lerp(shake_amount, 0, 0.1)


func add_shake(amount):
	shake_amount = min(shake_amount + amount, 20)


func set_limits_from(tilemap):
	var rect = tilemap.get_used_rect()
	var cell = tilemap.cell_size
	limit_left = rect.position.x * cell.x
	limit_right = rect.end.x * cell.x
	limit_top = rect.position.y * cell.y
	limit_bottom = rect.end.y * cell.y


func zoom_to(level):
	$Tween.interpolate_property(self, "zoom", zoom, Vector2(level, level), 0.5)
	$Tween.start()


func play_sfx(stream):
	var player = AudioStreamPlayer.new()
	player.stream = stream
	add_child(player)
	player.play()
	yield(player, "finished")
	player.queue_free()


func set_music_volume(linear):
	AudioServer.set_bus_volume_db(AudioServer.get_bus_index("Music"), linear2db(linear))


func is_on_screen(point):
	var half = get_viewport_rect().size * zoom / 2
	return Rect2(get_camera_screen_center() - half, half * 2).has_point(point)


func clear_target():
	target = null
	shake_amount = 0.0
