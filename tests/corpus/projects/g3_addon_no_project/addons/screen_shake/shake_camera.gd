extends Camera2D

export var decay = 0.8
export var max_offset = Vector2(100, 75)
export var max_roll = 0.1

var trauma = 0.0 setget set_trauma
var _noise = OpenSimplexNoise.new()


func _ready():
	randomize()
	_noise.seed = randi()
	_noise.period = 4


func set_trauma(value):
	trauma = clamp(value, 0.0, 1.0)


func _process(delta):
	if trauma > 0.0:
		trauma = max(trauma - decay * delta, 0.0)
		var amount = pow(trauma, 2)
		rotation = max_roll * amount * _noise.get_noise_1d(OS.get_ticks_msec())
		offset.x = max_offset.x * amount * rand_range(-1, 1)
		offset.y = max_offset.y * amount * rand_range(-1, 1)
