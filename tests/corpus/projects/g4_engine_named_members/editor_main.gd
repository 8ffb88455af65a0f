extends Control

var _logger := GameLogger.new("editor")
var _builder := LevelBuilder.new()
var _painter: HT_Painter


func _ready() -> void:
	GdUnitSignals.instance().test_started.connect(_on_test_started)
	_painter = HT_Painter.new()
	var img := Image.create(64, 64, false, Image.FORMAT_RGBA8)
	_painter.set_image(img, ImageTexture.create_from_image(img))


func paint(at: Vector2i) -> void:
	var p: HT_Painter = _painter
	if p.get_image() == null:
		_logger.error("no image to paint on")
		return
	p.paint_circle(at, 4, Color.WHITE)


func rebuild() -> void:
	_builder.add_cell(Vector2i(1, 2))
	var level := _builder.build()
	if level.is_empty():
		_logger.error("empty level")
	_logger.info("built %d cells" % level.size())


func _on_test_started(test_name: String) -> void:
	Log.info("test " + test_name)
