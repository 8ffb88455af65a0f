extends Node

# CRLF line endings throughout.
signal ping

var count = 0
var label = "a\r\nb"

func _ready():
	count += 1
	emit_signal("ping")


func other():
	pass
