extends HBoxContainer

var current_tool: ToolButton


func pick(button: ToolButton) -> void:
	if current_tool:
		current_tool.modulate = Color(1, 1, 1)
	current_tool = button


func is_player_turn(actor: Node) -> bool:
	return actor == World.player and World.turn % 2 == 0
