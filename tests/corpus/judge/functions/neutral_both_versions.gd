class_name Inventory
extends Node

signal item_added(item_name, amount)
signal item_removed(item_name)

enum Rarity { COMMON, RARE, EPIC }

const MAX_STACK := 99

var items := {}
var capacity: int = 20


func add_item(item_name: String, amount: int = 1) -> int:
	var current: int = items.get(item_name, 0)
	var added := int(min(amount, MAX_STACK - current))
	items[item_name] = current + added
	emit_signal("item_added", item_name, added)
	return added


func remove_item(item_name: String) -> void:
	if items.has(item_name):
		items.erase(item_name)
		emit_signal("item_removed", item_name)


func count(item_name: String) -> int:
	return items.get(item_name, 0)


func is_full() -> bool:
	return items.size() >= capacity


func total_items() -> int:
	var total := 0
	for key in items:
		total += items[key]
	return total


func rarity_color(rarity: int) -> Color:
	match rarity:
		Rarity.COMMON:
			return Color(0.8, 0.8, 0.8)
		Rarity.RARE:
			return Color(0.2, 0.5, 1.0)
		_:
			return Color(0.7, 0.2, 0.9)


func to_dict() -> Dictionary:
	return {"items": items.duplicate(), "capacity": capacity}


func from_dict(data: Dictionary) -> void:
	items = data.get("items", {})
	capacity = data.get("capacity", 20)


static func format_amount(amount: int) -> String:
	if amount >= 1000:
		return "%.1fk" % (amount / 1000.0)
	return str(amount)


func _to_string() -> String:
	return "Inventory(%d items)" % total_items()


func sorted_keys() -> Array:
	var keys := items.keys()
	keys.sort()
	return keys


func transfer_to(other: Node, item_name: String) -> void:
	if other.has_method("add_item"):
		other.add_item(item_name, count(item_name))
		remove_item(item_name)


func _notification(what: int) -> void:
	if what == NOTIFICATION_PREDELETE:
		items.clear()


func heaviest(weights: Dictionary) -> String:
	var best := ""
	var best_weight := -1.0
	for key in items:
		var w: float = weights.get(key, 0.0)
		if w > best_weight:
			best_weight = w
			best = key
	return best


func assert_valid() -> void:
	assert(capacity > 0, "capacity must be positive")
	assert(items.size() <= capacity)
