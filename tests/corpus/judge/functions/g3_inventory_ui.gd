extends Control

signal item_selected(index)

onready var list = $Panel/ItemList
onready var tooltip = $Tooltip


func _ready():
	list.connect("item_selected", self, "_on_item_selected")
	tooltip.visible = false


func populate(items):
	list.clear()
	for item in items:
		list.add_item(item.name, item.icon)


func _on_item_selected(index):
	emit_signal("item_selected", index)


func show_tooltip(text, at):
	tooltip.text = text
	tooltip.rect_global_position = at + Vector2(12, 12)
	tooltip.visible = true


func hide_tooltip():
	tooltip.visible = false


func resize_panel(size):
	$Panel.rect_size = size
	$Panel.margin_right = size.x


func style_panel(stylebox):
	$Panel.add_stylebox_override("panel", stylebox)


func sorted_names(items):
	var names = []
	for item in items:
		names.append(item.name)
	names.sort()
	return names


func grab_first():
	if list.get_item_count() > 0:
		list.select(0)
		list.grab_focus()


func dim(amount):
	modulate.a = 1.0 - amount
