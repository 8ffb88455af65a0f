extends Node

export var save_path = "user://save.dat"
onready var inventory = get_node("../Inventory")


func save_game():
	var file = File.new()
	file.open(save_path, File.WRITE)
	file.store_var(inventory.items)
	file.close()


func load_game():
	var file = File.new()
	if not file.file_exists(save_path):
		return
	file.open(save_path, File.READ)
	inventory.items = file.get_var()
	file.close()
	yield(get_tree(), "idle_frame")
