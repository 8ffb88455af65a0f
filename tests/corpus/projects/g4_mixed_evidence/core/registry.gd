class_name Registry
extends RefCounted

static var _shared: Registry
var _entries := {}


static func instance() -> Registry:
	if _shared == null:
		_shared = Registry.new()
	return _shared


func register(key: String, value) -> void:
	_entries[key] = value
	Events.level_started.emit(_entries.size())


func lookup(key: String):
	return _entries.get(key)
