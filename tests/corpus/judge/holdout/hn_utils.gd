extends Reference
# Helpers shared by several scenes; written to run on both engines.

const EPSILON = 0.0001


static func approx_equal(a, b):
	return abs(a - b) < EPSILON


static func format_seconds(total):
	var minutes = int(total) / 60
	var seconds = int(total) % 60
	return "%d:%02d" % [minutes, seconds]


static func pick(array, rng):
	if array.size() == 0:
		return null
	return array[rng.randi() % array.size()]


static func sum(values):
	var total = 0.0
	for v in values:
		total += v
	return total


static func average(values):
	if values.size() == 0:
		return 0.0
	return sum(values) / values.size()


static func direction_name(v):
	if abs(v.x) > abs(v.y):
		return "right" if v.x > 0 else "left"
	return "down" if v.y > 0 else "up"


static func weighted_index(weights, roll):
	var acc = 0.0
	for i in range(weights.size()):
		acc += weights[i]
		if roll < acc:
			return i
	return weights.size() - 1


static func clamp_vector(v, max_length):
	if v.length() > max_length:
		return v.normalized() * max_length
	return v


static func ease_out_quad(t):
	return 1.0 - (1.0 - t) * (1.0 - t)


static func to_title(text):
	return text.capitalize()
