extends Node

# Shared constants and per-session statistics.
# Registered as the "Globals" autoload in project.godot, so every scene can
# reach it as Globals.GRAVITY, Globals.best_time and so on.

const GRAVITY = 900

var attempts = 0
var best_time = 0.0


func _unhandled_input(event):
	if event.is_action_pressed("ui_cancel"):
		get_tree().quit()
	elif event is InputEventKey and event.pressed and not event.echo and event.scancode == KEY_F11:
		OS.window_fullscreen = not OS.window_fullscreen
