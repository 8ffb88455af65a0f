@tool
extends EditorInspectorPlugin


func _can_handle(object: Object) -> bool:
	return object.get_script() != null


func _parse_begin(object: Object) -> void:
	for method in object.get_method_list():
		var name: String = method.name
		if name.begins_with("_") and name.ends_with("_button"):
			var button := Button.new()
			button.text = name.trim_prefix("_").trim_suffix("_button").capitalize()
			button.pressed.connect(func(): object.call(name))
			add_custom_control(button)
