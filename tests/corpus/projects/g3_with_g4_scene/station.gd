extends Spatial

export(PackedScene) var ship_scene
onready var dock = $Dock


func _ready():
	var ship = ship_scene.instance()
	dock.add_child(ship)
	ship.connect("docked", self, "_on_ship_docked")


func _on_ship_docked(ship):
	yield(get_tree().create_timer(1.0), "timeout")
	ship.queue_free()
