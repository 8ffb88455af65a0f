extends Spatial


func to_world(v):
	return global_transform.xform(v)


func local_offset(t: Transform, v: Vector3):
	return t.xform(v)


func height():
	return global_transform.origin.y
