extends Node

signal level_started(index: int)
signal level_finished(index: int, score: int)
signal player_hit(damage: int)
