extends Node


func set_title(t):
	OS.set_window_title(t)


func toggle_fullscreen():
	OS.window_fullscreen = !OS.window_fullscreen


func screen_center():
	return OS.get_screen_size() / 2
