# This file has nothing but comments.
# extends KinematicBody2D

# func _ready(): yield(get_tree(), "idle_frame")
