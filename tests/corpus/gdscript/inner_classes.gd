extends Node

const Util = preload("res://util.gd")

var registry = {}


class Item extends Resource:
	var id: int
	var label := ""

	func _init(p_id: int) -> void:
		id = p_id

	static func from_dict(data: Dictionary) -> Item:
		return Item.new(data.get("id", 0))

	class Stack:
		var items: Array[Item] = []

		func push(item: Item) -> void:
			items.push_back(item)

		func top() -> Item:
			return items.back()


class Loader:
	extends Reference

	func _init():
		pass

	func load_all(path):
		var dir = Directory.new()
		return ResourceLoader.load(path)


func _ready():
	var stack = Item.Stack.new()
	stack.push(Item.from_dict({"id": 1}))
	registry["top"] = stack.top()
	Util.log(registry)
