extends Node

signal done(value)

var _pool: ObjectPool


func fill():
	ObjectPool.instance().build(8)


func finish(v):
	ObjectPool.instance().build(1); done.emit(v)


func describe() -> String:
	return _pool.return_type()


func fail(msg):
	Events.error(msg)


func joined(parts):
	return Events.build(parts)


func spawn(scene: PackedScene):
	add_child(scene.instantiate())


func make_texture(img: Image):
	var tex := ImageTexture.new()
	tex.set_image(img)
	return tex
