extends Node


func _init():
	pass


func _init():
	print("malformed: declared twice")


var a = 1

var a = 2
