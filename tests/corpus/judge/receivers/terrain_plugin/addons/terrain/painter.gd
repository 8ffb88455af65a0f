extends Node

var _image: Image
var _texture: ImageTexture
var _size := 0


func set_image(image: Image, texture: ImageTexture) -> void:
	_image = image
	_texture = texture


func build(size: int) -> void:
	_size = size


func return_type() -> String:
	return "painter"


func instance():
	return self
