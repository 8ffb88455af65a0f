extends Node

const PORT := 7777
const MAX_PLAYERS := 4

var players := {}
var my_info := {"name": "Player"}


func host_game() -> void:
	var peer := ENetMultiplayerPeer.new()
	peer.create_server(PORT, MAX_PLAYERS)
	multiplayer.multiplayer_peer = peer
	multiplayer.peer_connected.connect(_player_connected)


func join_game(address: String) -> void:
	var peer := ENetMultiplayerPeer.new()
	peer.create_client(address, PORT)
	multiplayer.multiplayer_peer = peer


func _player_connected(id: int) -> void:
	register_player.rpc_id(id, my_info)


@rpc("any_peer", "reliable")
func register_player(info: Dictionary) -> void:
	var id := multiplayer.get_remote_sender_id()
	players[id] = info


func is_host() -> bool:
	return multiplayer.is_server()


func claim_node(node: Node) -> void:
	node.set_multiplayer_authority(multiplayer.get_unique_id())


func owns(node: Node) -> bool:
	return node.is_multiplayer_authority()


@rpc("authority", "call_remote", "unreliable")
func update_position(pos: Vector2) -> void:
	get_parent().position = pos


func player_names() -> Array:
	var names := []
	for id in players:
		names.append(players[id]["name"])
	names.sort()
	return names


func leave() -> void:
	players.clear()
	multiplayer.multiplayer_peer = null
