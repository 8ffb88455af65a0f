extends Node


func report(store: Object) -> String:
	var saved: Dictionary = store.call("save_all")
	if not saved.ok:
		return "could not save: " + saved.error
	return "saved %d entries" % saved.count


func nothing_saved(saved: Dictionary) -> bool:
	return saved.empty()
