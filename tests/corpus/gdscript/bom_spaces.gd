extends Node

# Indented with four spaces instead of tabs.
func _ready():
    var a = 1
    if a:
        print(a)


func other():
	pass
