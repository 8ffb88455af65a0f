extends Label

# Título: «olá, mundo» — 世界 🌍
const GREETING = "Olá, 世界 🌍 KinematicBody2D"

func _ready():
	text = GREETING + " — ação"  # comentário com emoji 🎉 yield(
	var size = Vector2(10, 20)
	$Icone.hide()
	print(size.normalized())
