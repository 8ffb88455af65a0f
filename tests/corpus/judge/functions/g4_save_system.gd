extends Node

const SAVE_PATH := "user://savegame.json"
const SETTINGS_PATH := "user://settings.cfg"

var data: Dictionary = {}


func save_game() -> void:
	var file := FileAccess.open(SAVE_PATH, FileAccess.WRITE)
	if file == null:
		push_error("Could not open save file: %s" % FileAccess.get_open_error())
		return
	file.store_string(JSON.stringify(data))


func load_game() -> void:
	if not FileAccess.file_exists(SAVE_PATH):
		return
	var text := FileAccess.get_file_as_string(SAVE_PATH)
	var parsed = JSON.parse_string(text)
	if parsed is Dictionary:
		data = parsed


func list_saves() -> PackedStringArray:
	var saves := PackedStringArray()
	var dir := DirAccess.open("user://saves")
	if dir:
		for name in dir.get_files():
			if name.ends_with(".json"):
				saves.append(name)
	return saves


func stamp_save() -> void:
	data["saved_at"] = Time.get_unix_time_from_system()
	data["date"] = Time.get_datetime_string_from_system()


func save_settings(volume: float, fullscreen: bool) -> void:
	var config := ConfigFile.new()
	config.set_value("audio", "volume", volume)
	config.set_value("video", "fullscreen", fullscreen)
	config.save(SETTINGS_PATH)


func apply_settings(settings: Dictionary) -> void:
	var mode := DisplayServer.WINDOW_MODE_FULLSCREEN if settings.get("fullscreen", false) else DisplayServer.WINDOW_MODE_WINDOWED
	DisplayServer.window_set_mode(mode)
	var bus := AudioServer.get_bus_index("Master")
	AudioServer.set_bus_volume_db(bus, linear_to_db(settings.get("volume", 1.0)))


func has_save() -> bool:
	return not data.is_empty()


func reset() -> void:
	data.clear()
	data["level"] = 1
	data["coins"] = 0


func backup() -> Error:
	return DirAccess.copy_absolute(ProjectSettings.globalize_path(SAVE_PATH), ProjectSettings.globalize_path(SAVE_PATH + ".bak"))


func read_lines(path: String) -> Array[String]:
	var lines: Array[String] = []
	var f := FileAccess.open(path, FileAccess.READ)
	while f and not f.eof_reached():
		lines.append(f.get_line())
	return lines
