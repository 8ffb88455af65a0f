extends Node
# A job queue library written for Godot 3.x (no project file shipped with it).

var _jobs = []
var _started_at = 0


func is_empty():
	return _jobs.size() == 0


func push_job(job):
	_jobs.push_back(job)


func pop_job():
	if is_empty():
		return null
	return _jobs.pop_front()


func start():
	_started_at = OS.get_ticks_msec()


func elapsed():
	return OS.get_ticks_msec() - _started_at
