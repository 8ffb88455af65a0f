class_name GdUnitSignals
extends RefCounted

signal test_started(name: String)
signal test_finished(name: String, passed: bool)

static var _instance: GdUnitSignals


static func instance() -> GdUnitSignals:
	if _instance == null:
		_instance = GdUnitSignals.new()
	return _instance


static func dispose() -> void:
	_instance = null
