class_name StateMachine
extends Node

signal transitioned(from: StringName, to: StringName)

@export var initial_state: State

var current: State
var states: Dictionary = {}


func _ready() -> void:
	for child in get_children():
		if child is State:
			states[child.name.to_lower()] = child
			child.finished.connect(_on_state_finished)
	if initial_state:
		initial_state.enter()
		current = initial_state


func _process(delta: float) -> void:
	if current:
		current.update(delta)


func _physics_process(delta: float) -> void:
	if current:
		current.physics_update(delta)


func _on_state_finished(next_name: String) -> void:
	var next: State = states.get(next_name.to_lower())
	if next == null or next == current:
		return
	var previous := current.name
	current.exit()
	next.enter()
	current = next
	transitioned.emit(previous, next.name)


func force(name: String) -> void:
	_on_state_finished(name)


func state_names() -> PackedStringArray:
	var names := PackedStringArray()
	for key in states:
		names.append(key)
	return names


func has_state(name: String) -> bool:
	return states.has(name.to_lower())


func describe() -> String:
	return "StateMachine(%s)" % (current.name if current else "none")
