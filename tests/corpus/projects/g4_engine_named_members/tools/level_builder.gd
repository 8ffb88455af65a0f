class_name LevelBuilder
extends RefCounted

var return_type := "chunk"
var _cells: Array = []


func add_cell(cell: Vector2i) -> void:
	_cells.append(cell)


func build() -> Dictionary:
	var result := {}
	for cell in _cells:
		result[cell] = return_type
	return result
