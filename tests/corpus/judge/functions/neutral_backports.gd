extends Node2D

var rng = RandomNumberGenerator.new()
var started_at = 0


func _ready():
	rng.randomize()
	started_at = Time.get_ticks_msec()


func elapsed_seconds():
	return (Time.get_ticks_msec() - started_at) / 1000.0


func timestamp():
	var now = Time.get_datetime_dict_from_system()
	return "%04d-%02d-%02d" % [now.year, now.month, now.day]


func unix_now():
	return Time.get_unix_time_from_system()


func pop_in(node):
	node.scale = Vector2.ZERO
	var tween = create_tween()
	tween.tween_property(node, "scale", Vector2.ONE, 0.3).set_trans(Tween.TRANS_BACK).set_ease(Tween.EASE_OUT)


func shake(camera, strength):
	var tween = get_tree().create_tween()
	for i in range(4):
		var offset = Vector2(rng.randf_range(-strength, strength), rng.randf_range(-strength, strength))
		tween.tween_property(camera, "offset", offset, 0.05)
	tween.tween_property(camera, "offset", Vector2.ZERO, 0.05)


func blink(node):
	var tween = create_tween().set_loops(3)
	tween.tween_property(node, "modulate:a", 0.2, 0.1)
	tween.tween_property(node, "modulate:a", 1.0, 0.1)


func random_spawn_point(points):
	return points[rng.randi_range(0, points.size() - 1)]


func movement_vector():
	return Input.get_vector("left", "right", "up", "down")


func horizontal_input():
	return Input.get_axis("left", "right")


func slide_in(panel, from_x):
	var tween = create_tween()
	tween.set_parallel(true)
	tween.tween_property(panel, "position:x", 0.0, 0.4).from(from_x)
	tween.tween_property(panel, "modulate:a", 1.0, 0.4).from(0.0)


func roll_die(sides):
	return rng.randi_range(1, sides)


func chance(p):
	return rng.randf() < p


func frame_time_ms():
	return Time.get_ticks_usec() / 1000.0


func kill_tweens(tween):
	if tween and tween.is_valid():
		tween.kill()
