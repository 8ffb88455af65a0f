extends Node

var queue
var _image_cache = {}


func set_image(key, image):
	_image_cache[key] = image


func run_once():
	if queue.is_empty():
		return false
	var job = queue.pop_job()
	set_image(job.key, job.build())
	return true


func run_all():
	while not queue.is_empty():
		run_once()
