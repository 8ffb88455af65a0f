extends Node2D

var rng = RandomNumberGenerator.new()
var callbacks = []


func random_offset():
	return Vector2(rand_range(-8, 8), rand_range(-8, 8))


func snap_position(pos):
	return Vector2(stepify(pos.x, 16), stepify(pos.y, 16))


func remap_health(h):
	return range_lerp(h, 0, 100, 0, 1)


func register_callback(target, method):
	callbacks.append(funcref(target, method))


func call_all():
	for cb in callbacks:
		cb.call_func()


func is_editor():
	return Engine.editor_hint


func elapsed_ms(start):
	return OS.get_ticks_msec() - start


func encode(value):
	return var2str(value)


func decode(text):
	return str2var(text)


func screen_rect():
	return Rect2(Vector2.ZERO, OS.window_size)


func tag_list():
	var tags = PoolStringArray(["enemy", "flying"])
	return tags.join(",")


func redraw():
	update()


func _draw():
	draw_circle(Vector2.ZERO, 12, Color.red)


func spawn_tree(scene):
	var tree = scene.instance()
	tree.position = Vector2(rng.randf_range(0, 640), 0)
	add_child(tree)


func polar_point(radius, angle):
	return polar2cartesian(radius, angle)


func deferred_free(node):
	node.call_deferred("free")


func clamp_to_screen(pos):
	var size = get_viewport_rect().size
	return Vector2(clamp(pos.x, 0, size.x), clamp(pos.y, 0, size.y))


func set_title(text):
	OS.set_window_title(text)


func wait_frame():
	yield(get_tree(), "idle_frame")
