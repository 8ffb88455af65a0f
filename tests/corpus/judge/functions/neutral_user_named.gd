extends Node

# A scene manager autoload: its API reuses names that Godot 3 had.
signal scene_changed(path)

var current = null
var history = []


func change_scene(path):
	history.append(path)
	var scene = load(path)
	current = instance(scene)
	get_tree().root.add_child(current)
	emit_signal("scene_changed", path)


func instance(packed):
	# Works on both engines: 3.x names it instance(), 4.x instantiate().
	if packed.has_method("instantiate"):
		return packed.call("instantiate")
	return packed.call("instance")


func go_back():
	if history.size() < 2:
		return
	history.pop_back()
	change_scene(history.back())


func rand_range(low, high):
	return low + (high - low) * randf()


func random_delay():
	return rand_range(0.5, 1.5)


func empty():
	history.clear()
	current = null


func restart():
	self.empty()
	self.change_scene("res://main.tscn")


func goto_menu():
	SceneManager.change_scene("res://menu.tscn")


func roll_loot():
	return Loot.rand_range(1, 6)


func open_shop():
	Dialogs.instance("shop")


func set_network_master_name(value):
	history.append(value)


func update():
	if current:
		current.set_process(true)


func refresh():
	update()


func connect_ui(button):
	Hud.connect_button(button, "pressed")
