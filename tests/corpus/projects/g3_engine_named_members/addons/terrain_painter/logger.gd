extends Reference

var _prefix = ""


func _init(prefix = ""):
	_prefix = prefix


func debug(msg):
	if OS.is_debug_build():
		print("[", _prefix, "] ", msg)


func error(msg):
	push_error(str("[", _prefix, "] ", msg))
