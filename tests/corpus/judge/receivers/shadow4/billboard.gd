extends Sprite3D


func world_size() -> Vector2:
	return Vector2(texture.get_width(), texture.get_height()) * pixel_size


func old_pixels() -> Image:
	return texture.get_data()
