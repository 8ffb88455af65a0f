class_name HT_Painter
extends RefCounted

var _image: Image
var _texture: ImageTexture


func set_image(image: Image, texture: ImageTexture) -> void:
	_image = image
	_texture = texture


func get_image() -> Image:
	return _image


func paint_circle(center: Vector2i, radius: int, color: Color) -> void:
	for y in range(center.y - radius, center.y + radius + 1):
		for x in range(center.x - radius, center.x + radius + 1):
			if Vector2i(x, y).distance_to(center) <= radius:
				_image.set_pixel(x, y, color)
	_texture.update(_image)
