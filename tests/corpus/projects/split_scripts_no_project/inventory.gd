extends Node

signal item_added(item: String)

@export var capacity := 12
var items: Array[String] = []


func add(item: String) -> bool:
	if items.size() >= capacity:
		return false
	items.append(item)
	item_added.emit(item)
	return true
