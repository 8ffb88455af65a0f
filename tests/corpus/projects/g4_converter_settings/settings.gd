# Window settings, written from the Godot project converter's own test cases
# (editor/project_converter_3_to_4.cpp): the output it writes.
extends Node

var image

func apply_1(Settings):
	get_window().unresizable = not (Settings.resizable)


func apply_2(Settings):
	get_window().unresizable = not (Settings.resizable)


func apply_3(Settings):
	get_window().mode = Window.MODE_EXCLUSIVE_FULLSCREEN if (Settings.fullscreen) else Window.MODE_WINDOWED


func apply_4(Settings):
	get_window().mode = Window.MODE_EXCLUSIVE_FULLSCREEN if (Settings.fullscreen) else Window.MODE_WINDOWED


func apply_5(Settings):
	get_window().mode = Window.MODE_MAXIMIZED if (Settings.maximized) else Window.MODE_WINDOWED


func apply_6(Settings):
	get_window().mode = Window.MODE_MAXIMIZED if (Settings.maximized) else Window.MODE_WINDOWED


func apply_7(Settings):
	get_window().mode = Window.MODE_MINIMIZED if (Settings.minimized) else Window.MODE_WINDOWED


func apply_8(Settings):
	get_window().mode = Window.MODE_MINIMIZED if (Settings.minimized) else Window.MODE_WINDOWED


func apply_9(Settings):
	DisplayServer.window_set_vsync_mode(DisplayServer.VSYNC_ENABLED if (Settings.vsync) else DisplayServer.VSYNC_DISABLED)


func apply_10(Settings):
	DisplayServer.window_set_vsync_mode(DisplayServer.VSYNC_ENABLED if (Settings.vsync) else DisplayServer.VSYNC_DISABLED)


func apply_11(Settings):
	DisplayServer.screen_set_orientation(Settings.orient)


func apply_12(Settings):
	DisplayServer.screen_set_orientation(Settings.orient)


func apply_13(Settings):
	get_window().always_on_top = (Settings.alwaystop)


func apply_14(Settings):
	get_window().borderless = (Settings.borderless)


func apply_15(Settings):
	if (not get_window().unresizable): pass


func apply_16(Settings):
	if (not get_window().unresizable): pass


func apply_17(Settings):
	if ((get_window().mode == Window.MODE_EXCLUSIVE_FULLSCREEN) or (get_window().mode == Window.MODE_FULLSCREEN)): pass


func apply_18(Settings):
	if ((get_window().mode == Window.MODE_EXCLUSIVE_FULLSCREEN) or (get_window().mode == Window.MODE_FULLSCREEN)): pass


func apply_19(Settings):
	if (get_window().mode == Window.MODE_MAXIMIZED): pass


func apply_20(Settings):
	if (get_window().mode == Window.MODE_MAXIMIZED): pass


func apply_21(Settings):
	if (get_window().mode == Window.MODE_MINIMIZED): pass


func apply_22(Settings):
	if (get_window().mode == Window.MODE_MINIMIZED): pass


func apply_23(Settings):
	if (DisplayServer.window_get_vsync_mode() != DisplayServer.VSYNC_DISABLED): pass


func apply_24(Settings):
	if (DisplayServer.window_get_vsync_mode() != DisplayServer.VSYNC_DISABLED): pass


func apply_25(Settings):
	if get_window().always_on_top: pass


func apply_26(Settings):
	if get_window().borderless: pass


func apply_27(Settings):
	false # image.lock() # TODOConverter3To4, Image no longer requires locking, `false` helps to not break one line if/else, so it can freely be removed


func apply_28(Settings):
	false # image.unlock() # TODOConverter3To4, Image no longer requires locking, `false` helps to not break one line if/else, so it can freely be removed
