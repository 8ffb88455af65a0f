extends Object

const _INSTANCE_KEY = "HT_Signals"


static func instance():
	if not Engine.has_meta(_INSTANCE_KEY):
		Engine.set_meta(_INSTANCE_KEY, load("res://addons/terrain/signals.gd").new())
	return Engine.get_meta(_INSTANCE_KEY)
