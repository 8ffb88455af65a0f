extends Area2D


func _ready():
	connect("body_entered", self, "_on_body_entered")


func _on_body_entered(body):
	if body.has_method("collect"):
		body.collect()
		$AnimationPlayer.play("pickup")
		yield($AnimationPlayer, "animation_finished")
		queue_free()
