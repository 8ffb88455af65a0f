extends Node2D

@export var level_index := 0
var _score := 0


func _ready() -> void:
	Registry.instance().register("main", self); Events.level_started.emit(level_index)
	Events.player_hit.connect(_on_player_hit)


func finish() -> void:
	var reg = Registry.instance(); Events.level_finished.emit(level_index, _score)
	reg.register("last_score", _score)


func _on_player_hit(damage: int) -> void:
	_score = max(0, _score - damage)
	if Registry.instance().lookup("main") == self:
		Events.level_started.emit(level_index)
