extends Node

const SAVE_PATH = "user://savegame.json"
const SETTINGS_PATH = "user://settings.cfg"

var data = {}


func save_game():
	var file = File.new()
	var err = file.open(SAVE_PATH, File.WRITE)
	if err != OK:
		push_error("Could not open save file: %s" % err)
		return
	file.store_string(to_json(data))
	file.close()


func load_game():
	var file = File.new()
	if not file.file_exists(SAVE_PATH):
		return
	file.open(SAVE_PATH, File.READ)
	var parsed = parse_json(file.get_as_text())
	file.close()
	if typeof(parsed) == TYPE_DICTIONARY:
		data = parsed


func load_with_result():
	var file = File.new()
	file.open(SAVE_PATH, File.READ)
	var result = JSON.parse(file.get_as_text())
	file.close()
	if result.error == OK:
		data = result.result


func export_pretty():
	return JSON.print(data, "\t")


func list_saves():
	var saves = []
	var dir = Directory.new()
	if dir.open("user://saves") == OK:
		dir.list_dir_begin(true, true)
		var name = dir.get_next()
		while name != "":
			if name.ends_with(".json"):
				saves.append(name)
			name = dir.get_next()
		dir.list_dir_end()
	return saves


func stamp_save():
	data["saved_at"] = OS.get_unix_time()
	data["date"] = OS.get_datetime()


func save_settings(volume, fullscreen):
	var config = ConfigFile.new()
	config.set_value("audio", "volume", volume)
	config.set_value("video", "fullscreen", fullscreen)
	config.save(SETTINGS_PATH)


func load_settings():
	var config = ConfigFile.new()
	if config.load(SETTINGS_PATH) != OK:
		return {}
	return {
		"volume": config.get_value("audio", "volume", 1.0),
		"fullscreen": config.get_value("video", "fullscreen", false),
	}


func apply_settings(settings):
	OS.window_fullscreen = settings.get("fullscreen", false)
	var bus = AudioServer.get_bus_index("Master")
	AudioServer.set_bus_volume_db(bus, linear2db(settings.get("volume", 1.0)))


func has_save():
	return data.empty() == false


func reset():
	data.clear()
	data["level"] = 1
	data["coins"] = 0
