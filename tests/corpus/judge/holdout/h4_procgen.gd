extends Node2D

@export var width := 64
@export var height := 36
@export var noise: FastNoiseLite

@onready var tiles: TileMapLayer = $Ground


func generate(seed_value: int) -> void:
	noise.seed = seed_value
	tiles.clear()
	for x in width:
		for y in height:
			var n := noise.get_noise_2d(x, y)
			if n > 0.1:
				tiles.set_cell(Vector2i(x, y), 0, Vector2i(0, 0))


func neighbours(cell: Vector2i) -> Array[Vector2i]:
	return [cell + Vector2i.LEFT, cell + Vector2i.RIGHT, cell + Vector2i.UP, cell + Vector2i.DOWN]


func flood_fill(start: Vector2i) -> int:
	var seen := {start: true}
	var queue: Array[Vector2i] = [start]
	while not queue.is_empty():
		var c: Vector2i = queue.pop_front()
		for n in neighbours(c):
			if not seen.has(n) and tiles.get_cell_source_id(n) != -1:
				seen[n] = true
				queue.push_back(n)
	return seen.size()


func random_floor_cell() -> Vector2i:
	var used := tiles.get_used_cells()
	return used[randi() % used.size()]


func place_props(count: int) -> void:
	for i in count:
		var prop := preload("res://props/crate.tscn").instantiate()
		prop.position = tiles.map_to_local(random_floor_cell())
		add_child(prop)


func save_map(path: String) -> void:
	var f := FileAccess.open(path, FileAccess.WRITE)
	f.store_var(tiles.get_used_cells())


func area_ratio() -> float:
	return float(tiles.get_used_cells().size()) / float(width * height)


func clear_all() -> void:
	tiles.clear()
	for child in get_children():
		if child != tiles:
			child.queue_free()
