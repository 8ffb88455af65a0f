extends Node

const PORT = 7777
const MAX_PLAYERS = 4

var players = {}
var my_info = {"name": "Player"}


func host_game():
	var peer = NetworkedMultiplayerENet.new()
	peer.create_server(PORT, MAX_PLAYERS)
	get_tree().network_peer = peer
	get_tree().connect("network_peer_connected", self, "_player_connected")


func join_game(address):
	var peer = NetworkedMultiplayerENet.new()
	peer.create_client(address, PORT)
	get_tree().network_peer = peer


func _player_connected(id):
	rpc_id(id, "register_player", my_info)


remote func register_player(info):
	var id = get_tree().get_rpc_sender_id()
	players[id] = info


func is_host():
	return get_tree().is_network_server()


func my_id():
	return get_tree().get_network_unique_id()


func claim_node(node):
	node.set_network_master(get_tree().get_network_unique_id())


func owns(node):
	return node.is_network_master()


puppet func update_position(pos):
	get_parent().position = pos


func player_names():
	var names = []
	for id in players:
		names.append(players[id]["name"])
	names.sort()
	return names


func leave():
	players.clear()
	get_tree().network_peer = null
