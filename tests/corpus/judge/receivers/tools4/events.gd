extends Node

signal changed(value)


func error(msg: String) -> void:
	push_error(msg)


func build(parts: Array) -> String:
	return ",".join(parts)
