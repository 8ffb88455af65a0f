class_name Orbit
extends Area2D

signal captured(points: int)

@export var radius := 64.0
var angle := 0.0


func _physics_process(delta: float) -> void:
	angle = wrapf(angle + delta * TAU / 2.0, 0.0, TAU)
	rotation = angle


func _draw() -> void:
	draw_arc(Vector2.ZERO, radius, 0.0, angle, 32, Color.WHITE, 4.0)


func _on_body_entered(body: Node2D) -> void:
	captured.emit(10)
	body.reparent(self)
