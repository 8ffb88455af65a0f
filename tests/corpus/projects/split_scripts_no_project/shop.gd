extends Control

@onready var _list: ItemList = $List


func _ready() -> void:
	_list.item_selected.connect(_on_item_selected)


func _on_item_selected(index: int) -> void:
	var item := _list.get_item_text(index)
	await get_tree().create_timer(0.2).timeout
	print("bought ", item)
