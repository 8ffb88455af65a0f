extends Node
class_name HT_Logger

var _prefix := ""


static func get_for(owner):
	var logger = load("res://addons/terrain/util/logger.gd").new()
	logger._prefix = str(owner)
	return logger


func debug(msg: String) -> void:
	print(_prefix, ": ", msg)


func error(msg: String) -> void:
	push_error(_prefix + ": " + msg)
