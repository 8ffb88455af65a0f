extends Node

const Painter = preload("../painter.gd")

var _painters := []


func make_stroke_painter():
	var p = Painter.new()
	p.set_name("Stroke painter")
	p.set_image(null, null)
	_painters.append(p)
	return p


func rename_all(prefix: String) -> void:
	for i in len(_painters):
		_painters[i].set_name(prefix + str(i))
