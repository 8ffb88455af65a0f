extends KinematicBody

# Code commented out with the editor's toggle: '#' at column 0, before the line's own indentation.
# Godot skips comment lines when it reads indentation; the grammar's scanner did not.

var state = {}

func set_state(s, value):
	state[s] = value
	match s:
		"dead":
			if value:
#				enable_ragdoll(true)
				$shape.disabled = true
#				$character/skeleton.physical_bones_start_simulation()
			else:
#				enable_ragdoll(false)
				$shape.disabled = false
		"water":
			if value:
				$sounds/water.play()
#x


# Godot 3's parser skips `var` before a parameter name (Godot 4 rejects it).
func spawn_tile(var x: int, var y: int) -> Node:
	return null


static func blend(var a, b = Vector2(1, 2),
		var c := "var, (x)") -> void:
	if a:
		pass
#	elif b:
#		pass
	else:
		print(c)
