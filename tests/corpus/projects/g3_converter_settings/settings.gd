# Window settings, written from the Godot project converter's own test cases
# (editor/project_converter_3_to_4.cpp): the input it converts.
extends Node

var image

func apply_1(Settings):
	OS.set_window_resizable(Settings.resizable)


func apply_2(Settings):
	OS.window_resizable = Settings.resizable


func apply_3(Settings):
	OS.set_window_fullscreen(Settings.fullscreen)


func apply_4(Settings):
	OS.window_fullscreen = Settings.fullscreen


func apply_5(Settings):
	OS.set_window_maximized(Settings.maximized)


func apply_6(Settings):
	OS.window_maximized = Settings.maximized


func apply_7(Settings):
	OS.set_window_minimized(Settings.minimized)


func apply_8(Settings):
	OS.window_minimized = Settings.minimized


func apply_9(Settings):
	OS.set_use_vsync(Settings.vsync)


func apply_10(Settings):
	OS.vsync_enabled = Settings.vsync


func apply_11(Settings):
	OS.set_screen_orientation(Settings.orient)


func apply_12(Settings):
	OS.screen_orientation = Settings.orient


func apply_13(Settings):
	OS.set_window_always_on_top(Settings.alwaystop)


func apply_14(Settings):
	OS.set_borderless_window(Settings.borderless)


func apply_15(Settings):
	if OS.window_resizable: pass


func apply_16(Settings):
	if OS.is_window_resizable(): pass


func apply_17(Settings):
	if OS.window_fullscreen: pass


func apply_18(Settings):
	if OS.is_window_fullscreen(): pass


func apply_19(Settings):
	if OS.window_maximized: pass


func apply_20(Settings):
	if OS.is_window_maximized(): pass


func apply_21(Settings):
	if OS.window_minimized: pass


func apply_22(Settings):
	if OS.is_window_minimized(): pass


func apply_23(Settings):
	if OS.vsync_enabled: pass


func apply_24(Settings):
	if OS.is_vsync_enabled(): pass


func apply_25(Settings):
	if OS.is_window_always_on_top(): pass


func apply_26(Settings):
	if OS.get_borderless_window(): pass


func apply_27(Settings):
	image.lock()


func apply_28(Settings):
	image.unlock()
