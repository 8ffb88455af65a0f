extends Node2D

var rng := RandomNumberGenerator.new()
var callbacks: Array[Callable] = []


func random_offset() -> Vector2:
	return Vector2(randf_range(-8, 8), randf_range(-8, 8))


func snap_position(pos: Vector2) -> Vector2:
	return Vector2(snapped(pos.x, 16), snapped(pos.y, 16))


func remap_health(h: float) -> float:
	return remap(h, 0, 100, 0, 1)


func register_callback(target: Object, method: StringName) -> void:
	callbacks.append(Callable(target, method))


func call_all() -> void:
	for cb in callbacks:
		cb.call()


func is_editor() -> bool:
	return Engine.is_editor_hint()


func encode(value) -> String:
	return var_to_str(value)


func decode(text: String):
	return str_to_var(text)


func screen_rect() -> Rect2:
	return Rect2(Vector2.ZERO, DisplayServer.window_get_size())


func tag_list() -> String:
	var tags := PackedStringArray(["enemy", "flying"])
	return ",".join(tags)


func redraw() -> void:
	queue_redraw()


func _draw() -> void:
	draw_circle(Vector2.ZERO, 12, Color.RED)


func spawn_tree(scene: PackedScene) -> void:
	var tree := scene.instantiate()
	tree.position = Vector2(rng.randf_range(0, 640), 0)
	add_child(tree)


func doubled(values: Array) -> Array:
	return values.map(func(v): return v * 2)


func only_alive(enemies: Array) -> Array:
	return enemies.filter(func(e): return e.health > 0)


func wait_frame() -> void:
	await get_tree().process_frame


func set_title(text: String) -> void:
	get_window().title = text


func pick_weighted(weights: PackedFloat32Array) -> int:
	return rng.rand_weighted(weights)


func play_idle() -> void:
	$AnimationPlayer.play(&"idle")
	$Path2D/PathFollow2D.progress_ratio = 0.0


func nodes_at(path: NodePath) -> Node:
	return get_node(^"Level/Spawns").get_node(path)
