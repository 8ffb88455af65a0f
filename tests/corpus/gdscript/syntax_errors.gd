extends Node

var ok_before = 1

func broken(:
	var x = (1 +
	return x

func fine_after():
	print("still parsed")

var unclosed = [1, 2
const AFTER = 3

func tail():
	if true
		pass
	yield(get_tree(), "idle_frame")
func swallowed():
	pass
}}}
func last():
	pass
