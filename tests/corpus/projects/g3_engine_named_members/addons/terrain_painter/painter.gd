extends Reference

var _image
var _texture
var _brush_size = 8


func set_image(image, texture):
	_image = image
	_texture = texture


func get_image():
	return _image


func set_brush_size(size):
	_brush_size = size


func paint(center, color):
	_image.lock()
	for y in range(center.y - _brush_size, center.y + _brush_size):
		for x in range(center.x - _brush_size, center.x + _brush_size):
			if Vector2(x, y).distance_to(center) <= _brush_size:
				_image.set_pixel(x, y, color)
	_image.unlock()
	_texture.set_data(_image)
