# Top-of-file banner: this script used to extend KinematicBody2D and call yield(
# but it was ported; nothing in a comment is code.
extends Node2D

const MESSAGE = "KinematicBody2D is gone, do not yield(get_tree(), 'idle_frame')"
var scene_path = "res://levels/level_01.tscn" # the first level


# A detached note about the helpers below.
# It spans two lines.

# Leading comment of _ready.
func _ready():
	# yield(get_tree(), "idle_frame") is Godot 3 only
	var text = "call move_and_slide( here is just text"
	print(text, MESSAGE)
	var level = load(scene_path)
	var other = load("res://levels/level_02.tscn")
	print(level, other)
var trailing_note = 1
# commented-out: var old_speed = 10

#region Helpers
func helper():
	return 'KinematicBody2D'
#endregion

func last():
	pass

# Trailing comment at the end of the file,
# after the last function.
