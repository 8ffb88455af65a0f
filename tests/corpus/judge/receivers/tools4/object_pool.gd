class_name ObjectPool
extends Node

static var _singleton: ObjectPool

var _items := []


static func instance() -> ObjectPool:
	if _singleton == null:
		_singleton = ObjectPool.new()
	return _singleton


func build(count: int) -> void:
	for i in count:
		_items.append(i)


func return_type() -> String:
	return "pool"
