extends Node2D

const CELL := 16

@export var tick_seconds := 0.15
@onready var _timer: Timer = $Tick
@onready var _snake: Line2D = $Snake

var _direction := Vector2i.RIGHT
var _body: Array[Vector2i] = [Vector2i(5, 5), Vector2i(4, 5), Vector2i(3, 5)]


func _ready() -> void:
	_timer.wait_time = tick_seconds
	_timer.timeout.connect(_on_tick)
	if OS.has_feature("pc"):
		OS.window_fullscreen = false


func _unhandled_input(event: InputEvent) -> void:
	if event.is_action_pressed("ui_up") and _direction != Vector2i.DOWN:
		_direction = Vector2i.UP
	elif event.is_action_pressed("ui_down") and _direction != Vector2i.UP:
		_direction = Vector2i.DOWN


func _on_tick() -> void:
	var head: Vector2i = _body[0] + _direction
	_body.push_front(head)
	_body.pop_back()
	_snake.points = PackedVector2Array(_body.map(func(c): return Vector2(c * CELL)))
