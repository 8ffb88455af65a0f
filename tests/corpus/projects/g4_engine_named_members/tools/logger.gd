class_name GameLogger
extends RefCounted
## A small logger: the project's own error/warn/info, not the engine's.

enum Level { INFO, WARN, ERROR }

var prefix := ""
var level := Level.INFO


func _init(p_prefix := "") -> void:
	prefix = p_prefix


func info(message: String) -> void:
	if level <= Level.INFO:
		print("[%s] %s" % [prefix, message])


func warn(message: String) -> void:
	if level <= Level.WARN:
		push_warning("[%s] %s" % [prefix, message])


func error(message: String) -> void:
	push_error("[%s] %s" % [prefix, message])
