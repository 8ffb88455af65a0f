tool
extends Node

const HT_Painter = preload("res://addons/terrain/painter.gd")
const HT_Signals = preload("res://addons/terrain/signals.gd")

var _painters := []
var _logger = HT_Logger.get_for(self)


func paint_one(img: Image, tex: ImageTexture) -> void:
	var p: HT_Painter = _painters[0]
	p.set_image(img, tex)


func make_painter(size: int):
	var p := HT_Painter.new()
	p.build(size)
	_painters.append(p)
	return p


func describe(p: HT_Painter) -> String:
	return p.return_type()


func report(msg: String) -> void:
	_logger.error(msg)


func log_global(msg: String) -> void:
	Log.error(msg)


func signals():
	return HT_Signals.instance()


func first_painter():
	return _painters[0].instance()


func spawn_preview(scene: PackedScene) -> void:
	var node = scene.instance()
	add_child(node)


func load_preview(path: String) -> void:
	var node = load(path).instance()
	add_child(node)
