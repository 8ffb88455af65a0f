tool
extends EditorPlugin

const HT_Painter = preload("res://addons/terrain_painter/painter.gd")
const HT_Logger = preload("res://addons/terrain_painter/logger.gd")

var _painter: HT_Painter
var _logger = HT_Logger.new("terrain")
var _panel


func _enter_tree():
	_painter = HT_Painter.new()
	_panel = preload("res://addons/terrain_painter/panel.tscn").instance()
	add_control_to_dock(DOCK_SLOT_LEFT_UL, _panel)
	_panel.connect("brush_changed", self, "_on_brush_changed")


func _exit_tree():
	remove_control_from_docks(_panel)
	_panel.free()


func edit_heightmap(img):
	var tex = ImageTexture.new()
	tex.create_from_image(img)
	var p: HT_Painter = _painter
	p.set_image(img, tex)
	_logger.debug("editing " + str(img.get_size()))


func paint_at(pos):
	if _painter.get_image() == null:
		_logger.error("no heightmap selected")
		return
	_painter.paint(pos, Color.white)


func _on_brush_changed(size):
	_painter.set_brush_size(size)
