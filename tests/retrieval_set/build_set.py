"""Builds cases.jsonl, the labelled retrieval set of `make eval-retrieval`.

Run from the repository root: ``.venv/bin/python tests/retrieval_set/build_set.py``.
Deterministic (no randomness beyond a fixed-seed shuffle); the output is committed.

Three parts:
- ``hand``: chunks written by hand (Godot 3 syntax the guide describes, Godot 4
  code, version-neutral code, chunks of the sample projects), each with the
  api_mapping / docs / prototype records a reviewer expects to see;
- ``renamed``: one chunk per sampled converter rename pair (enabled, GDScript
  side, an old name no other pair shares), written as realistic usage of the
  old name; the expected record is that pair (plus the Godot 3 class page for
  class renames);
- ``direct``: chunks of scenes, resources, ``.import`` files and ``project.godot``
  (the direct chunker's), by hand and from sampled class and property renames
  used where a scene uses them (a node's type, a node's property);
- an expected entry "a|b" is met by either record (the doc page of a member
  that version-neutral code uses exists in both class references);
- every case is a whole small file; the eval runs it through the real chunker
  of its kind (``godot_rag.domain.chunking.files.chunk_file``) and takes the chunk
  named in ``chunk`` (a chunk id) to build the query.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from godot_rag.domain.retrieval.knowledge import class_reference_names, read_jsonl_gz

HERE = Path(__file__).resolve().parent
PV = "Is this Godot 3 or Godot 4, and what is the basis for converting it?"
PROMPTS = [
    PV,
    "Does this need to be converted to Godot 4?",
    "이 코드는 Godot 3인가요 Godot 4인가요? 변환 근거는 무엇인가요?",
    "Este código é do Godot 3 ou do Godot 4? Precisa de conversão?",
    "Ist dieser Code für Godot 3 oder 4? Muss das konvertiert werden?",
    "What does this code do?",
]

cases: list[dict] = []


def case(cid: str, category: str, source: str, chunk: str, expect: list[str], prompt: str = PV, file: str = "") -> None:
    cases.append(
        {
            "id": cid,
            "category": category,
            "file": file or f"{cid}.gd",
            "source": source,
            "chunk": chunk,
            "prompt": prompt,
            "expect": expect,
        }
    )


def direct(cid: str, file: str, source: str, chunk: str, expect: list[str], prompt: str = PV) -> None:
    """A chunk of a scene, resource, import or project file (the direct chunker's), named ``file``."""
    case(cid, "direct", source, f"{file}:{chunk}", expect, prompt, file)


A, D, P = "api_mapping:", "docs_chunks:", "label_prototypes:"


def either(g4: str, g3: str | None = None) -> str:
    """The doc page of a member in either version: version-neutral code is documented by both."""
    return f"{D}docs:4:{g4}|{D}docs:3:{g3 or g4}"


# ---------------------------------------------------------------- hand-written: Godot 3 syntax and changed APIs
case(
    "h-yield-timer",
    "godot3_changed",
    'func _on_hit():\n\tmodulate = Color(1, 0, 0)\n\tyield(get_tree().create_timer(0.2), "timeout")\n\tmodulate = Color(1, 1, 1)\n',
    "h-yield-timer.gd:function:_on_hit",
    [A + "change:yield-await", P + "proto:g3-yield-timer"],
)
case(
    "h-yield-anim",
    "godot3_changed",
    'func die():\n\t$AnimationPlayer.play("death")\n\tyield($AnimationPlayer, "animation_finished")\n\tqueue_free()\n',
    "h-yield-anim.gd:function:die",
    [A + "change:yield-animation-finished", P + "proto:g3-yield-animation"],
)
case(
    "h-yield-frame",
    "godot3_changed",
    'func _ready():\n\tyield(get_tree(), "idle_frame")\n\tset_process(true)\n',
    "h-yield-frame.gd:function:_ready",
    [A + "change:yield-idle-frame"],
)
case(
    "h-connect3",
    "godot3_changed",
    'func _ready():\n\t$StartTimer.connect("timeout", self, "_on_StartTimer_timeout")\n\t$HUD.connect("start_game", self, "new_game")\n',
    "h-connect3.gd:function:_ready",
    [A + "change:connect-callable", P + "proto:g3-connect-strings"],
)
case(
    "h-connect-binds",
    "godot3_changed",
    'func spawn(enemy):\n\tenemy.connect("died", self, "_on_enemy_died", [enemy])\n\tadd_child(enemy)\n',
    "h-connect-binds.gd:function:spawn",
    [A + "change:connect-binds"],
)
case(
    "h-disconnect",
    "godot3_changed",
    'func stop_listening():\n\tif is_connected("hit", self, "_on_hit"):\n\t\tdisconnect("hit", self, "_on_hit")\n',
    "h-disconnect.gd:function:stop_listening",
    [A + "change:disconnect-callable"],
)
case(
    "h-setget",
    "godot3_changed",
    "var health = 100 setget set_health\n",
    "h-setget.gd:variable:health",
    [A + "change:setget", P + "proto:g3-setget"],
)
case(
    "h-setget2",
    "godot3_changed",
    "var speed = 10.0 setget _set_speed, _get_speed\n",
    "h-setget2.gd:variable:speed",
    [A + "change:setget"],
)
case(
    "h-export-int",
    "godot3_changed",
    "export(int) var lives = 3\nexport(float, 0.0, 1.0) var volume = 0.5\n",
    "h-export-int.gd:variable:lives",
    [A + "change:export-keyword", A + "change:export-range"],
)
case(
    "h-export-scene",
    "godot3_changed",
    "export(PackedScene) var mob_scene\n",
    "h-export-scene.gd:variable:mob_scene",
    [A + "change:export-resource"],
)
case(
    "h-export-file",
    "godot3_changed",
    'export(String, FILE, "*.json") var level_file\n',
    "h-export-file.gd:variable:level_file",
    [A + "change:export-file"],
)
case(
    "h-export-enum",
    "godot3_changed",
    'export(int, "Easy", "Normal", "Hard") var difficulty = 1\n',
    "h-export-enum.gd:variable:difficulty",
    [A + "change:export-enum"],
)
case(
    "h-export-plain",
    "godot3_changed",
    "export var speed = 400\nexport var gravity = 900\n",
    "h-export-plain.gd:variable:speed",
    [A + "change:export-keyword", P + "proto:g3-export-plain"],
)
case(
    "h-onready",
    "godot3_changed",
    "onready var anim = $AnimationPlayer\nonready var label = $Label\n",
    "h-onready.gd:variable:anim",
    [A + "change:onready", P + "proto:g3-onready"],
)
case("h-tool", "godot3_changed", "tool\nextends Node2D\n", "h-tool.gd:tool:1", [A + "change:tool", P + "proto:g3-tool"])
case(
    "h-remote",
    "godot3_changed",
    "remote func set_pos(p):\n\tposition = p\n",
    "h-remote.gd:function:set_pos",
    [A + "change:rpc-keywords", P + "proto:g3-rpc-keywords"],
)
case(
    "h-puppet",
    "godot3_changed",
    "puppet func update_state(pos, vel):\n\tposition = pos\n\tvelocity = vel\n",
    "h-puppet.gd:function:update_state",
    [A + "change:rpc-keywords"],
)
case(
    "h-network-master",
    "godot3_changed",
    'func _physics_process(delta):\n\tif is_network_master():\n\t\trpc_unreliable("sync", position)\n',
    "h-network-master.gd:function:_physics_process",
    [A + "change:rpc-set-network-master"],
)
case(
    "h-move-slide",
    "godot3_changed",
    "func _physics_process(delta):\n\tvelocity.y += gravity * delta\n\tvelocity = move_and_slide(velocity, Vector2.UP)\n",
    "h-move-slide.gd:function:_physics_process",
    [A + "change:move-and-slide", P + "proto:g3-kinematic-move"],
)
case(
    "h-move-snap",
    "godot3_changed",
    "func _physics_process(delta):\n\tvelocity = move_and_slide_with_snap(velocity, snap, Vector2.UP)\n",
    "h-move-snap.gd:function:_physics_process",
    [A + "change:move-and-slide-with-snap", P + "proto:g3-move-and-slide-snap"],
)
case(
    "h-slide-count",
    "godot3_changed",
    'func check_hits():\n\tfor i in get_slide_count():\n\t\tvar c = get_slide_collision(i)\n\t\tif c.collider.is_in_group("mobs"):\n\t\t\tdie()\n',
    "h-slide-count.gd:function:check_hits",
    [A + "change:kinematic-collision", P + "proto:g3-kinematic-collision"],
)
case(
    "h-tween",
    "godot3_changed",
    'func fade_out():\n\t$Tween.interpolate_property($Sprite, "modulate:a", 1.0, 0.0, 0.5)\n\t$Tween.start()\n',
    "h-tween.gd:function:fade_out",
    [A + "change:tween-node", P + "proto:g3-tween-node"],
)
case(
    "h-file",
    "godot3_changed",
    'func save_game(data):\n\tvar f = File.new()\n\tf.open("user://save.dat", File.WRITE)\n\tf.store_var(data)\n\tf.close()\n',
    "h-file.gd:function:save_game",
    [A + "change:file-class", P + "proto:g3-file"],
)
case(
    "h-file-exists",
    "godot3_changed",
    'func has_save():\n\tvar f = File.new()\n\treturn f.file_exists("user://save.dat")\n',
    "h-file-exists.gd:function:has_save",
    [A + "change:file-exists"],
)
case(
    "h-directory",
    "godot3_changed",
    'func list_levels():\n\tvar dir = Directory.new()\n\tdir.open("res://levels")\n\tdir.list_dir_begin(true, true)\n',
    "h-directory.gd:function:list_levels",
    [A + "rename:class_renames:Directory", A + "change:directory-class"],
)
case(
    "h-string-right",
    "godot3_changed",
    'func extension(path):\n\treturn path.right(path.find_last(".") + 1)\n',
    "h-string-right.gd:function:extension",
    [A + "change:string-right"],
)
case(
    "h-slice",
    "godot3_changed",
    "func first_three(items):\n\treturn items.slice(0, 2)\n",
    "h-slice.gd:function:first_three",
    [A + "change:array-slice"],
)
case(
    "h-zoom",
    "godot3_changed",
    "func zoom_in():\n\t$Camera2D.zoom = Vector2(0.5, 0.5)\n",
    "h-zoom.gd:function:zoom_in",
    [A + "change:camera2d-zoom"],
)
case(
    "h-extents",
    "godot3_changed",
    "func resize(w, h):\n\t$CollisionShape2D.shape.extents = Vector2(w, h) / 2\n",
    "h-extents.gd:function:resize",
    [A + "change:extents-size", P + "proto:g3-extents"],
)
case(
    "h-instance",
    "godot3_changed",
    "func spawn():\n\tvar mob = mob_scene.instance()\n\tadd_child(mob)\n",
    "h-instance.gd:function:spawn",
    [A + "change:instance-instantiate", P + "proto:g3-instance"],
)
case(
    "h-fullscreen",
    "godot3_changed",
    'func _input(event):\n\tif event.is_action_pressed("fullscreen"):\n\t\tOS.window_fullscreen = not OS.window_fullscreen\n',
    "h-fullscreen.gd:function:_input",
    [A + "change:os-window-fullscreen", P + "proto:g3-os-window"],
)
case(
    "h-screen-size",
    "godot3_changed",
    "func _ready():\n\tvar size = OS.get_screen_size()\n\tOS.window_size = size / 2\n",
    "h-screen-size.gd:function:_ready",
    [A + "change:os-screen-size", A + "change:os-window-size"],
)
case(
    "h-ticks",
    "godot3_changed",
    "func elapsed():\n\treturn OS.get_ticks_msec() - start_time\n",
    "h-ticks.gd:function:elapsed",
    [A + "change:os-time"],
)
case(
    "h-json",
    "godot3_changed",
    "func load_config(text):\n\tvar res = JSON.parse(text)\n\tif res.error == OK:\n\t\treturn res.result\n",
    "h-json.gd:function:load_config",
    [A + "change:json-parse", P + "proto:g3-json-parse"],
)
case(
    "h-to-json",
    "godot3_changed",
    "func serialize(data):\n\treturn to_json(data)\n",
    "h-to-json.gd:function:serialize",
    [A + "change:to-json"],
)
case(
    "h-super-dot",
    "godot3_changed",
    "func _ready():\n\t._ready()\n\thealth = max_health\n",
    "h-super-dot.gd:function:_ready",
    [A + "change:super-call"],
)
case(
    "h-pool",
    "godot3_changed",
    "var names = PoolStringArray()\n",
    "h-pool.gd:variable:names",
    [A + "rename:builtin_types_renames:PoolStringArray", A + "change:pool-arrays"],
)
case(
    "h-deg2rad",
    "godot3_changed",
    "func aim(angle):\n\trotation = deg2rad(angle)\n",
    "h-deg2rad.gd:function:aim",
    [A + "rename:gdscript_function_renames:deg2rad"],
)
case(
    "h-rand-range",
    "godot3_changed",
    "func random_speed():\n\treturn rand_range(min_speed, max_speed)\n",
    "h-rand-range.gd:function:random_speed",
    [A + "rename:gdscript_function_renames:rand_range"],
)
case(
    "h-update",
    "godot3_changed",
    "func _process(delta):\n\tangle += delta\n\tupdate()\n",
    "h-update.gd:function:_process",
    [A + "change:update-queue-redraw"],
)
case(
    "h-change-scene",
    "godot3_changed",
    'func _on_Start_pressed():\n\tget_tree().change_scene("res://Main.tscn")\n',
    "h-change-scene.gd:function:_on_Start_pressed",
    [A + "rename:gdscript_function_renames:change_scene", A + "change:change-scene"],
)
case(
    "h-empty",
    "godot3_changed",
    "func is_done():\n\treturn queue.empty()\n",
    "h-empty.gd:function:is_done",
    [A + "change:array-empty"],
)
case(
    "h-scancode",
    "godot3_changed",
    "func _unhandled_input(event):\n\tif event is InputEventKey and event.scancode == KEY_SPACE:\n\t\tjump()\n",
    "h-scancode.gd:function:_unhandled_input",
    [A + "rename:gdscript_properties_renames:scancode"],
)
case(
    "h-button-left",
    "godot3_changed",
    "func _input(event):\n\tif event is InputEventMouseButton and event.button_index == BUTTON_LEFT:\n\t\tshoot()\n",
    "h-button-left.gd:function:_input",
    [A + "rename:enum_renames:BUTTON_LEFT"],
)
case(
    "h-color-white",
    "godot3_changed",
    "func _end_flash():\n\tmodulate = Color.white\n",
    "h-color-white.gd:function:_end_flash",
    [A + "rename:color_renames:white"],
)
case(
    "h-rect-size",
    "godot3_changed",
    "func layout():\n\t$Panel.rect_size = Vector2(200, 80)\n\t$Panel.rect_position = Vector2(10, 10)\n",
    "h-rect-size.gd:function:layout",
    [A + "rename:gdscript_properties_renames:rect_size", A + "change:rect-properties"],
)
case(
    "h-spatial",
    "godot3_changed",
    "extends Spatial\n",
    "h-spatial.gd:class_extends:1",
    [A + "rename:class_renames:Spatial", D + "docs:3:Spatial"],
)
case(
    "h-kinematic",
    "godot3_changed",
    "extends KinematicBody2D\n",
    "h-kinematic.gd:class_extends:1",
    [A + "rename:class_renames:KinematicBody2D", D + "docs:3:KinematicBody2D"],
)
case(
    "h-color-override",
    "godot3_changed",
    'func warn():\n\t$Label.add_color_override("font_color", Color(1, 0, 0))\n',
    "h-color-override.gd:function:warn",
    [A + "rename:gdscript_function_renames:add_color_override"],
)
case(
    "h-thread",
    "godot3_changed",
    'func load_async(path):\n\tthread = Thread.new()\n\tthread.start(self, "_load", path)\n',
    "h-thread.gd:function:load_async",
    [A + "change:thread-start"],
)
case(
    "h-image-lock",
    "godot3_changed",
    "func read_pixel(img, x, y):\n\timg.lock()\n\tvar c = img.get_pixel(x, y)\n\timg.unlock()\n\treturn c\n",
    "h-image-lock.gd:function:read_pixel",
    [A + "change:image-lock"],
)
case(
    "h-pause-mode",
    "godot3_changed",
    "func _ready():\n\tpause_mode = Node.PAUSE_MODE_PROCESS\n",
    "h-pause-mode.gd:function:_ready",
    [A + "change:pause-mode"],
)
case(
    "h-editor-hint",
    "godot3_changed",
    "func _process(delta):\n\tif Engine.editor_hint:\n\t\treturn\n",
    "h-editor-hint.gd:function:_process",
    [A + "change:editor-hint"],
)
case(
    "h-opensimplex",
    "godot3_changed",
    "func make_noise():\n\tvar noise = OpenSimplexNoise.new()\n\tnoise.octaves = 4\n\treturn noise\n",
    "h-opensimplex.gd:function:make_noise",
    [A + "change:opensimplex", D + "docs:3:OpenSimplexNoise"],
)
case(
    "h-intersect",
    "godot3_changed",
    "func can_see(target):\n\tvar space = get_world_2d().direct_space_state\n\tvar hit = space.intersect_ray(global_position, target.global_position, [self])\n\treturn hit.empty()\n",
    "h-intersect.gd:function:can_see",
    [A + "change:world-direct-space"],
)
case(
    "h-nav2d",
    "godot3_changed",
    "func path_to(target):\n\treturn $Navigation2D.get_simple_path(global_position, target)\n",
    "h-nav2d.gd:function:path_to",
    [A + "change:navigation2d"],
)
case(
    "h-tilemap",
    "godot3_changed",
    "func paint(x, y):\n\t$TileMap.set_cell(x, y, 1)\n\tvar cell = $TileMap.world_to_map(get_global_mouse_position())\n",
    "h-tilemap.gd:function:paint",
    [A + "change:tilemap-set-cell"],
)
case(
    "h-impulse",
    "godot3_changed",
    "func kick():\n\tapply_impulse(Vector2.ZERO, Vector2(0, -400))\n",
    "h-impulse.gd:function:kick",
    [A + "change:apply-impulse"],
)
case(
    "h-network-peer",
    "godot3_changed",
    "func host():\n\tvar peer = NetworkedMultiplayerENet.new()\n\tpeer.create_server(4242, 8)\n\tget_tree().network_peer = peer\n",
    "h-network-peer.gd:function:host",
    [A + "change:get-tree-network", A + "rename:class_renames:NetworkedMultiplayerENet"],
)
case(
    "h-call-group",
    "godot3_changed",
    'func game_over():\n\tget_tree().call_group("mobs", "queue_free")\n',
    "h-call-group.gd:function:game_over",
    [A + "change:call-group"],
)
case(
    "h-func-ref",
    "godot3_changed",
    'func _ready():\n\tcallback = funcref(self, "_on_done")\n\tcallback.call_func()\n',
    "h-func-ref.gd:function:_ready",
    [A + "change:funcref-callable"],
)
case(
    "h-sort-custom",
    "godot3_changed",
    'func sort_scores():\n\tscores.sort_custom(self, "_by_points")\n',
    "h-sort-custom.gd:function:sort_scores",
    [A + "change:sort-custom"],
)
case(
    "h-visibility",
    "godot3_changed",
    "func _on_VisibilityNotifier2D_screen_exited():\n\tqueue_free()\n",
    "h-visibility.gd:function:_on_VisibilityNotifier2D_screen_exited",
    [A + "change:visibility-notifier"],
)

# ---------------------------------------------------------------- hand-written: Godot 4 code
case(
    "g4-characterbody",
    "godot4",
    "extends CharacterBody2D\n",
    "g4-characterbody.gd:class_extends:1",
    [D + "docs:4:CharacterBody2D", A + "rename:class_renames:KinematicBody2D"],
)
case(
    "g4-move",
    "godot4",
    "func _physics_process(delta):\n\tvelocity.y += gravity * delta\n\tmove_and_slide()\n",
    "g4-move.gd:function:_physics_process",
    [A + "change:move-and-slide", P + "proto:g4-characterbody"],
)
case(
    "g4-await",
    "godot4",
    "func _on_hit():\n\tmodulate = Color.RED\n\tawait get_tree().create_timer(0.2).timeout\n\tmodulate = Color.WHITE\n",
    "g4-await.gd:function:_on_hit",
    [A + "change:yield-await", P + "proto:g4-await"],
)
case(
    "g4-connect",
    "godot4",
    "func _ready():\n\t$StartTimer.timeout.connect(_on_start_timer_timeout)\n\t$HUD.start_game.connect(new_game)\n",
    "g4-connect.gd:function:_ready",
    [A + "change:connect-callable", P + "proto:g4-signal-connect"],
)
case(
    "g4-emit",
    "godot4",
    "func take_damage(n):\n\thealth -= n\n\thealth_changed.emit(health)\n",
    "g4-emit.gd:function:take_damage",
    [A + "change:emit-signal", P + "proto:g4-signal-emit"],
)
case(
    "g4-export",
    "godot4",
    "@export var speed: int = 400\n@export_range(0, 1) var friction: float = 0.2\n",
    "g4-export.gd:variable:speed",
    [P + "proto:g4-export", A + "change:export-range"],
)
case(
    "g4-onready",
    "godot4",
    "@onready var sprite: Sprite2D = $Sprite2D\n",
    "g4-onready.gd:variable:sprite",
    [P + "proto:g4-onready", A + "change:onready"],
)
case("g4-tool", "godot4", "@tool\nextends Node2D\n", "g4-tool.gd:tool:1", [P + "proto:g4-tool", A + "change:tool"])
case(
    "g4-instantiate",
    "godot4",
    "func spawn():\n\tvar mob = mob_scene.instantiate()\n\tadd_child(mob)\n",
    "g4-instantiate.gd:function:spawn",
    [A + "change:instance-instantiate", P + "proto:g4-instantiate"],
)
case(
    "g4-fileaccess",
    "godot4",
    'func save_game(data):\n\tvar f = FileAccess.open("user://save.dat", FileAccess.WRITE)\n\tf.store_var(data)\n',
    "g4-fileaccess.gd:function:save_game",
    [A + "change:file-class", D + "docs:4:FileAccess.open"],
)
case(
    "g4-tween",
    "godot4",
    'func fade_out():\n\tvar tween = create_tween()\n\ttween.tween_property($Sprite2D, "modulate:a", 0.0, 0.5)\n',
    "g4-tween.gd:function:fade_out",
    [P + "proto:g4-create-tween", D + "docs:4:Node.create_tween"],
)
case(
    "g4-rpc",
    "godot4",
    '@rpc("any_peer")\nfunc set_pos(p):\n\tposition = p\n',
    "g4-rpc.gd:function:set_pos",
    [P + "proto:g4-rpc", A + "change:rpc-keywords"],
)
case(
    "g4-setget",
    "godot4",
    "var health: int = 100:\n\tset(value):\n\t\thealth = clampi(value, 0, 100)\n",
    "g4-setget.gd:variable:health",
    [P + "proto:g4-set-get", A + "change:setget"],
)
case(
    "g4-window",
    "godot4",
    "func toggle_fullscreen():\n\tif get_window().mode == Window.MODE_FULLSCREEN:\n\t\tget_window().mode = Window.MODE_WINDOWED\n",
    "g4-window.gd:function:toggle_fullscreen",
    [P + "proto:g4-window-mode"],
)
case(
    "g4-node3d",
    "godot4",
    "extends Node3D\n",
    "g4-node3d.gd:class_extends:1",
    [D + "docs:4:Node3D", A + "rename:class_renames:Spatial"],
)
case(
    "g4-queue-redraw",
    "godot4",
    "func _process(delta):\n\tangle += delta\n\tqueue_redraw()\n",
    "g4-queue-redraw.gd:function:_process",
    [A + "change:update-queue-redraw", D + "docs:4:CanvasItem.queue_redraw"],
)
case(
    "g4-raycast",
    "godot4",
    "func can_see(target):\n\tvar query = PhysicsRayQueryParameters2D.create(global_position, target.global_position)\n\treturn get_world_2d().direct_space_state.intersect_ray(query).is_empty()\n",
    "g4-raycast.gd:function:can_see",
    [D + "docs:4:PhysicsRayQueryParameters2D", A + "change:world-direct-space"],
)
case(
    "g4-json",
    "godot4",
    "func load_config(text):\n\treturn JSON.parse_string(text)\n",
    "g4-json.gd:function:load_config",
    [D + "docs:4:JSON.parse_string", A + "change:json-parse"],
)
case(
    "g4-super",
    "godot4",
    "func _ready():\n\tsuper()\n\thealth = max_health\n",
    "g4-super.gd:function:_ready",
    [P + "proto:g4-super", A + "change:lifecycle-super"],
)

# ---------------------------------------------------------------- hand-written: version-neutral code
SEED_PROCESS = (
    "func _process(delta):\n\tvar velocity = Vector2.ZERO # The player's movement vector.\n"
    '\tif Input.is_action_pressed(&"move_right"):\n\t\tvelocity.x += 1\n\tif Input.is_action_pressed(&"move_left"):\n\t\tvelocity.x -= 1\n'
    '\tif Input.is_action_pressed(&"move_down"):\n\t\tvelocity.y += 1\n\tif Input.is_action_pressed(&"move_up"):\n\t\tvelocity.y -= 1\n\n'
    "\tif velocity.length() > 0:\n\t\tvelocity = velocity.normalized() * speed\n\t\t$AnimatedSprite2D.play()\n\telse:\n\t\t$AnimatedSprite2D.stop()\n\n"
    "\tposition += velocity * delta\n\tposition = position.clamp(Vector2.ZERO, screen_size)\n"
)
case(
    "n-seed-process",
    "neutral",
    SEED_PROCESS,
    "n-seed-process.gd:function:_process",
    [D + "docs:4:Input.is_action_pressed", D + "docs:4:AnimatedSprite2D", P + "proto:n-input-movement"],
)
case(
    "n-input-plain",
    "neutral",
    'func _process(delta):\n\tvar velocity = Vector2.ZERO\n\tif Input.is_action_pressed("ui_right"):\n\t\tvelocity.x += 1\n\tposition += velocity.normalized() * speed * delta\n',
    "n-input-plain.gd:function:_process",
    [D + "docs:3:Input.is_action_pressed", D + "docs:4:Input.is_action_pressed", P + "proto:n-input-movement"],
)
case(
    "n-ready",
    "neutral",
    "func _ready():\n\tscreen_size = get_viewport_rect().size\n\thide()\n",
    "n-ready.gd:function:_ready",
    [either("CanvasItem.get_viewport_rect"), P + "proto:n-ready-viewport"],
)
case(
    "n-queue-free",
    "neutral",
    'func _on_body_entered(body):\n\tif body.is_in_group("player"):\n\t\tbody.take_damage(1)\n\tqueue_free()\n',
    "n-queue-free.gd:function:_on_body_entered",
    [P + "proto:n-queue-free", either("Node.queue_free")],
)
case("n-signals", "neutral", "signal hit\nsignal score_changed(value)\n", "n-signals.gd:signal:hit", [P + "proto:n-signal-decl"])
case("n-area2d", "neutral", "extends Area2D\n", "n-area2d.gd:class_extends:1", [D + "docs:4:Area2D", D + "docs:3:Area2D"])
case("n-node2d", "neutral", "extends Node2D\n", "n-node2d.gd:class_extends:1", [D + "docs:4:Node2D", D + "docs:3:Node2D"])
case(
    "n-timer",
    "neutral",
    "func start_wave():\n\t$SpawnTimer.wait_time = 1.5\n\t$SpawnTimer.one_shot = false\n\t$SpawnTimer.start()\n",
    "n-timer.gd:function:start_wave",
    [P + "proto:n-timer-start"],
)
case(
    "n-animation",
    "neutral",
    'func play_run():\n\tif not $AnimationPlayer.is_playing():\n\t\t$AnimationPlayer.play("run")\n',
    "n-animation.gd:function:play_run",
    [either("AnimationPlayer.is_playing"), P + "proto:n-animation-play"],
)
case(
    "n-vector-math",
    "neutral",
    "func aim_at(target):\n\tvar direction = (target - global_position).normalized()\n\trotation = direction.angle()\n\treturn global_position.distance_to(target)\n",
    "n-vector-math.gd:function:aim_at",
    [P + "proto:n-vector-math", either("Vector2.distance_to")],
)
case(
    "n-randi",
    "neutral",
    "func pick(items):\n\treturn items[randi() % items.size()]\n",
    "n-randi.gd:function:pick",
    [P + "proto:n-random", either("@GlobalScope.randi", "@GDScript.randi")],
)
case("n-preload", "neutral", 'const Bullet = preload("res://bullet.tscn")\n', "n-preload.gd:const:Bullet", [P + "proto:n-preload"])
case(
    "n-jump",
    "neutral",
    'func _physics_process(delta):\n\tif is_on_floor() and Input.is_action_just_pressed("jump"):\n\t\tvelocity.y = -jump_speed\n',
    "n-jump.gd:function:_physics_process",
    [P + "proto:n-is-on-floor", either("CharacterBody2D.is_on_floor", "KinematicBody2D.is_on_floor")],
)
case(
    "n-axis",
    "neutral",
    'func get_input():\n\tvar x = Input.get_action_strength("right") - Input.get_action_strength("left")\n\treturn x\n',
    "n-axis.gd:function:get_input",
    [P + "proto:n-get-action-strength", either("Input.get_action_strength")],
)
case(
    "n-label",
    "neutral",
    "func update_score(score):\n\t$ScoreLabel.text = str(score)\n\t$Message.show()\n",
    "n-label.gd:function:update_score",
    [P + "proto:n-label-text"],
)
case(
    "n-move-toward",
    "neutral",
    "func _process(delta):\n\tposition = position.move_toward(target, speed * delta)\n",
    "n-move-toward.gd:function:_process",
    [P + "proto:n-move-toward", either("Vector2.move_toward")],
)
case(
    "n-add-child",
    "neutral",
    'func spawn_marker():\n\tvar m = Node2D.new()\n\tadd_child(m)\n\tm.name = "Marker"\n',
    "n-add-child.gd:function:spawn_marker",
    [P + "proto:n-add-child", either("Node.add_child")],
)
case(
    "n-paused",
    "neutral",
    'func _unhandled_input(event):\n\tif event.is_action_pressed("pause"):\n\t\tget_tree().paused = not get_tree().paused\n',
    "n-paused.gd:function:_unhandled_input",
    [P + "proto:n-process-input", either("SceneTree.paused")],
)

# ---------------------------------------------------------------- hand-written: declarations (variables, constants, signals)
case(
    "h-decl-rpc",
    "godot3_changed",
    "remote var health = 100\npuppet var puppet_position = Vector2()\n",
    "h-decl-rpc.gd:variable:health",
    [A + "change:rpc-keywords", P + "proto:g3-rpc-keywords"],
)
case(
    "h-decl-color",
    "godot3_changed",
    "export(Color, RGB) var tint = Color(1, 1, 1)\n",
    "h-decl-color.gd:variable:tint",
    [A + "change:export-color-no-alpha"],
)
case(
    "h-decl-layers",
    "godot3_changed",
    "export(int, LAYERS_2D_PHYSICS) var hit_mask = 1\n",
    "h-decl-layers.gd:variable:hit_mask",
    [A + "change:export-flags-layers"],
)
case(
    "h-decl-file",
    "godot3_changed",
    "var save_file = File.new()\n",
    "h-decl-file.gd:variable:save_file",
    [A + "change:file-class", P + "proto:g3-file"],
)
case(
    "h-decl-dir",
    "godot3_changed",
    "var levels_dir = Directory.new()\n",
    "h-decl-dir.gd:variable:levels_dir",
    [A + "change:directory-class", P + "proto:g3-directory"],
)
case(
    "h-decl-tween",
    "godot3_changed",
    "onready var fade = Tween.new()\n",
    "h-decl-tween.gd:variable:fade",
    [A + "change:tween-node", P + "proto:g3-tween-node"],
)
case(
    "h-decl-font",
    "godot3_changed",
    "var title_font = DynamicFont.new()\n",
    "h-decl-font.gd:variable:title_font",
    [A + "change:dynamicfont"],
)
case(
    "h-decl-enet",
    "godot3_changed",
    "var peer = NetworkedMultiplayerENet.new()\n",
    "h-decl-enet.gd:variable:peer",
    [A + "rename:class_renames:NetworkedMultiplayerENet", P + "proto:g3-network-peer"],
)
case(
    "h-decl-onready-typed",
    "godot3_changed",
    "onready var timer := $Cooldown as Timer\n",
    "h-decl-onready-typed.gd:variable:timer",
    [A + "change:onready"],
)
case(
    "g4-decl-typed-array",
    "godot4",
    "var enemies: Array[Node2D] = []\n",
    "g4-decl-typed-array.gd:variable:enemies",
    [P + "proto:g4-typed-array", A + "change:typed-arrays"],
)
case(
    "g4-decl-stringname",
    "godot4",
    'const JUMP_ACTION := &"jump"\n',
    "g4-decl-stringname.gd:const:JUMP_ACTION",
    [P + "proto:g4-stringname", A + "change:stringname-literal"],
)
case(
    "g4-decl-group",
    "godot4",
    '@export_group("Movement")\n@export var speed := 300.0\n',
    "g4-decl-group.gd:variable:speed",
    [P + "proto:g4-export-groups"],
)
case(
    "g4-decl-rpc",
    "godot4",
    '@rpc("any_peer")\nfunc take_damage(amount):\n\thealth -= amount\n',
    "g4-decl-rpc.gd:function:take_damage",
    [P + "proto:g4-rpc", A + "change:rpc-keywords"],
)
case(
    "g4-decl-unique",
    "godot4",
    "@onready var hud: CanvasLayer = %HUD\n",
    "g4-decl-unique.gd:variable:hud",
    [P + "proto:g4-unique-node"],
)
case(
    "n-decl-signal-args",
    "neutral",
    "signal health_changed(old_value, new_value)\n",
    "n-decl-signal-args.gd:signal:health_changed",
    [P + "proto:n-signal-decl"],
)
case(
    "n-decl-rng",
    "neutral",
    "var rng = RandomNumberGenerator.new()\n",
    "n-decl-rng.gd:variable:rng",
    [either("RandomNumberGenerator")],
)
case("n-decl-zero", "neutral", "var velocity = Vector2.ZERO\n", "n-decl-zero.gd:variable:velocity", [either("Vector2.ZERO")])
case(
    "n-decl-preload",
    "neutral",
    'const Explosion = preload("res://fx/explosion.tscn")\n',
    "n-decl-preload.gd:const:Explosion",
    [P + "proto:n-preload"],
)


# ---------------------------------------------------------------- renamed: sampled converter pairs
def sampled_renames() -> None:
    rows = list(read_jsonl_gz("godot_renames_3to4.jsonl.gz"))
    godot3 = class_reference_names(read_jsonl_gz("godot3_class_reference.jsonl.gz"))
    g3_classes = {r["class"] for r in read_jsonl_gz("godot3_class_reference.jsonl.gz") if r["kind"] == "class"}
    gd_tables = {
        "class_renames",
        "gdscript_function_renames",
        "gdscript_properties_renames",
        "gdscript_signals_renames",
        "enum_renames",
        "color_renames",
        "builtin_types_renames",
    }
    counts: dict[str, int] = {}
    for r in rows:
        if r["table"] in gd_tables:
            counts[r["old"]] = counts.get(r["old"], 0) + 1
    pool: dict[str, list[dict]] = {}
    for r in rows:
        old = r["old"]
        if (
            r["table"] in gd_tables
            and r["enabled"]
            and counts[old] == 1
            and old != r["new"]
            and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", old)
            and old in godot3
        ):
            pool.setdefault(r["table"], []).append(r)
    quota = {
        "class_renames": 34,
        "gdscript_function_renames": 34,
        "gdscript_properties_renames": 22,
        "gdscript_signals_renames": 6,
        "enum_renames": 10,
        "color_renames": 6,
        "builtin_types_renames": 3,
    }
    rng = random.Random(5)
    for table, n in quota.items():
        items = sorted(pool.get(table, []), key=lambda r: r["old"])
        rng.shuffle(items)
        for r in items[:n]:
            old, ctx = r["old"], (r.get("context") or "").split("--")[0].split(",")[0].strip()
            ctx = ctx if re.fullmatch(r"[A-Z][A-Za-z0-9]+", ctx or "") else ""
            rid = f"rename:{table}:{old}"
            cid = f"r-{table.split('_')[0]}-{old}"
            expect = [A + rid]
            if table == "class_renames":
                if rng.random() < 0.5:
                    source, chunk = f"extends {old}\n", "class_extends:1"
                else:
                    source, chunk = (
                        f"extends Node\n\nfunc _ready():\n\tvar thing = {old}.new()\n\tadd_child(thing)\n",
                        "function:_ready",
                    )
                if old in g3_classes:
                    expect.append(D + f"docs:3:{old}")
            elif table == "gdscript_function_renames":
                recv = f"${ctx}" if ctx and ctx not in ("Node", "Object") else "target"
                source = (
                    f"extends Node2D\n\nfunc _on_timer_timeout():\n\tvar result = {recv}.{old}()\n\tif result:\n\t\tprint(result)\n"
                )
                chunk = "function:_on_timer_timeout"
            elif table == "gdscript_properties_renames":
                recv = f"${ctx}" if ctx and ctx not in ("Node", "Object") else "node"
                source = f"func _process(delta):\n\tif {recv}.{old}:\n\t\t{recv}.{old} = value\n"
                chunk = "function:_process"
            elif table == "gdscript_signals_renames":
                recv = f"${ctx}" if ctx else "$Target"
                source = f'func _ready():\n\t{recv}.connect("{old}", self, "_on_{old}")\n'
                chunk = "function:_ready"
            elif table == "enum_renames":
                source = f"func _check(value):\n\tif value == {old}:\n\t\treturn true\n\treturn false\n"
                chunk = "function:_check"
            elif table == "color_renames":
                source = f"func _flash():\n\tmodulate = Color.{old}\n"
                chunk = "function:_flash"
            else:
                source, chunk = f"var data = {old}()\n", "variable:data"
            case(cid, "renamed_godot3", source, f"{cid}.gd:{chunk}", expect, PROMPTS[len(cases) % len(PROMPTS)])


# ---------------------------------------------------------------- direct: scenes, resources, imports, project.godot
G3_SCENE = '[gd_scene load_steps=3 format=2]\n\n[ext_resource path="res://player.gd" type="Script" id=1]\n\n'
G4_SCENE = '[gd_scene load_steps=3 format=3 uid="uid://b8u3k2x1q0mfa"]\n\n[ext_resource type="Script" path="res://player.gd" id="1_abcd"]\n\n'
direct(
    "d-scene-format2",
    "main.tscn",
    G3_SCENE + '[node name="Main" type="Node"]\nscript = ExtResource( 1 )\n',
    "header:gd_scene",
    [P + "proto:g3-scene-format2", A + "change:scene-format"],
)
direct(
    "d-scene-format3",
    "main.tscn",
    G4_SCENE + '[node name="Main" type="Node"]\nscript = ExtResource("1_abcd")\n',
    "header:gd_scene",
    [P + "proto:g4-scene-format3"],
)
direct(
    "d-project-g3",
    "project.godot",
    'config_version=4\n\n[application]\n\nconfig/name="Dodge"\nrun/main_scene="res://Main.tscn"\n',
    "config_version:config_version",
    [P + "proto:g3-project-godot", A + "change:config-version"],
)
direct(
    "d-project-g4",
    "project.godot",
    'config_version=5\n\n[application]\n\nconfig/name="Dodge"\nconfig/features=PackedStringArray("4.2")\n',
    "config_version:config_version",
    [P + "proto:g4-project-godot"],
)
direct(
    "d-project-window",
    "project.godot",
    "config_version=4\n\n[display]\n\nwindow/size/width=480\nwindow/size/height=720\n",
    "section:display",
    [A + "rename:project_settings_renames:display/window/size/width"],
)
direct(
    "d-import-stex",
    "icon.png.import",
    '[remap]\n\nimporter="texture"\ntype="StreamTexture"\npath="res://.import/icon.png-487276ed1e3a0c39cad0279d744ee560.stex"\n',
    "section:remap",
    [A + "rename:class_renames:StreamTexture"],
)
direct(
    "d-kinematic-node",
    "player.tscn",
    G3_SCENE + '[node name="Player" type="KinematicBody2D"]\nscript = ExtResource( 1 )\n',
    "node:Player",
    [A + "rename:class_renames:KinematicBody2D", D + "docs:3:KinematicBody2D"],
)
direct(
    "d-spatial-node",
    "level.tscn",
    G3_SCENE + '[node name="Level" type="Spatial"]\nscript = ExtResource( 1 )\n',
    "node:Level",
    [A + "rename:class_renames:Spatial", D + "docs:3:Spatial"],
)
direct(
    "d-extents",
    "player.tscn",
    '[gd_scene load_steps=2 format=2]\n\n[sub_resource type="RectangleShape2D" id=1]\nextents = Vector2( 16, 24 )\n\n'
    '[node name="Shape" type="CollisionShape2D"]\nshape = SubResource( 1 )\n',
    "sub_resource:1",
    [A + "change:extents-size", P + "proto:g3-extents"],
)
direct(
    "d-rect-props",
    "hud.tscn",
    '[gd_scene format=2]\n\n[node name="HUD" type="Control"]\nrect_min_size = Vector2( 320, 40 )\nrect_pivot_offset = Vector2( 160, 20 )\n',
    "node:HUD",
    [A + "change:rect-properties"],
)
direct(
    "d-margins",
    "hud.tscn",
    '[gd_scene format=2]\n\n[node name="Panel" type="Panel"]\nmargin_left = 8.0\nmargin_top = 8.0\nmargin_right = 120.0\nmargin_bottom = 40.0\n',
    "node:Panel",
    [A + "change:margin-offset"],
)
direct(
    "d-custom-colors",
    "hud.tscn",
    '[gd_scene format=2]\n\n[node name="Score" type="Label"]\ncustom_colors/font_color = Color( 1, 0.8, 0, 1 )\ntext = "0"\n',
    "node:Score",
    [A + "rename:theme_override_renames:custom_colors/|" + A + "change:theme-overrides"],
)
direct(
    "d-pause-mode",
    "main.tscn",
    '[gd_scene format=2]\n\n[node name="Pause" type="CanvasLayer"]\npause_mode = 2\n',
    "node:Pause",
    [A + "change:pause-mode"],
)
direct(
    "d-characterbody",
    "player.tscn",
    G4_SCENE + '[node name="Player" type="CharacterBody2D"]\nscript = ExtResource("1_abcd")\n',
    "node:Player",
    [D + "docs:4:CharacterBody2D"],
)
direct(
    "d-node3d",
    "level.tscn",
    G4_SCENE + '[node name="Level" type="Node3D"]\nscript = ExtResource("1_abcd")\n',
    "node:Level",
    [D + "docs:4:Node3D"],
)
direct(
    "d-timer-node",
    "main.tscn",
    '[gd_scene format=2]\n\n[node name="SpawnTimer" type="Timer"]\nwait_time = 0.5\none_shot = true\n',
    "node:SpawnTimer",
    [either("Timer")],
)
direct(
    "d-area-node",
    "mob.tscn",
    '[gd_scene format=3]\n\n[node name="Coin" type="Area2D"]\nmonitoring = true\n',
    "node:Coin",
    [either("Area2D")],
)
direct(
    "d-anim-sprite",
    "mob.tscn",
    '[gd_scene format=2]\n\n[node name="AnimatedSprite" type="AnimatedSprite"]\nframes = SubResource( 1 )\nanimation = "walk"\nplaying = true\n',
    "node:AnimatedSprite",
    [A + "rename:class_renames:AnimatedSprite", A + "change:animatedsprite-playing"],
)
direct(
    "d-resource-g3",
    "theme.tres",
    '[gd_resource type="DynamicFont" load_steps=2 format=2]\n\n[ext_resource path="res://font.ttf" type="DynamicFontData" id=1]\n\n[resource]\nsize = 32\nfont_data = ExtResource( 1 )\n',
    "resource:resource",
    [A + "change:dynamicfont"],
)
direct(
    "d-env-resource",
    "default_env.tres",
    '[gd_resource type="Environment" load_steps=2 format=2]\n\n[sub_resource type="ProceduralSky" id=1]\n\n[resource]\nbackground_mode = 2\nbackground_sky = SubResource( 1 )\n',
    "sub_resource:1",
    [A + "rename:class_renames:ProceduralSky"],
)
direct(
    "d-input-map",
    "project.godot",
    'config_version=4\n\n[input]\n\nmove_left={\n"deadzone": 0.5,\n"events": [ Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,"scancode":16777231,"physical_scancode":0,"unicode":0,"echo":false,"script":null)\n ]\n}\n',
    "input_action:move_left",
    [A + "change:input-scancode"],
)


def connection(cid: str, node_type: str, signal: str, expect: list[str]) -> None:
    """A scene's signal connection to a signal Godot 4 renamed."""
    direct(
        cid,
        "main.tscn",
        f'[gd_scene load_steps=2 format=2]\n\n[node name="Main" type="Node"]\n\n'
        f'[node name="Thing" type="{node_type}" parent="."]\n\n'
        f'[connection signal="{signal}" from="Thing" to="." method="_on_Thing_{signal}"]\n',
        f"connection:Main/Thing.{signal}->Main._on_Thing_{signal}",
        expect,
    )


def sampled_scene_renames() -> None:
    """Node types, sub-resource types and node properties of a Godot 3 scene that Godot 4 renamed
    (sampled converter pairs whose old name is a Godot 3 node or resource class, or a property of a node class)."""
    rows = list(read_jsonl_gz("godot_renames_3to4.jsonl.gz"))
    reference = list(read_jsonl_gz("godot3_class_reference.jsonl.gz"))
    parent = {r["class"]: r.get("inherits") or "" for r in reference if r["kind"] == "class"}

    def derives(cls: str, base: str) -> bool:
        while cls:
            if cls == base:
                return True
            cls = parent.get(cls, "")
        return False

    owners: dict[str, set[str]] = {}
    for r in reference:
        if r["kind"] == "property" and derives(r["class"], "Node"):
            owners.setdefault(r["name"], set()).add(r["class"])
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["old"]] = counts.get(r["old"], 0) + 1
    usable = [r for r in rows if r["enabled"] and counts[r["old"]] == 1 and r["old"] != r["new"]]
    classes = sorted(
        {
            r["old"]
            for r in usable
            if r["table"] == "class_renames"
            and r["old"] in parent
            and (derives(r["old"], "Node") or derives(r["old"], "Resource"))
            and not r["old"].startswith(("Editor", "Visual"))
        }
    )
    props = sorted({r["old"] for r in usable if r["table"] == "gdscript_properties_renames" and r["old"] in owners})
    rng = random.Random(9)
    rng.shuffle(classes)
    rng.shuffle(props)
    for old in classes[:24]:
        expect = [A + f"rename:class_renames:{old}", D + f"docs:3:{old}"]
        if derives(old, "Node"):
            source = (
                f'[gd_scene load_steps=2 format=2]\n\n[node name="Level" type="Node"]\n\n'
                f'[node name="{old}" type="{old}" parent="."]\n'
            )
            chunk = f"node:Level/{old}"
        else:
            source = f'[gd_scene load_steps=2 format=2]\n\n[sub_resource type="{old}" id=1]\n\n[node name="Level" type="Node"]\n'
            chunk = "sub_resource:1"
        direct(f"d-class-{old}", "level.tscn", source, chunk, expect, PROMPTS[len(cases) % len(PROMPTS)])
    for old in props[:12]:
        owner = sorted(owners[old])[0]
        direct(
            f"d-prop-{old}",
            "level.tscn",
            f'[gd_scene load_steps=2 format=2]\n\n[node name="Thing" type="{owner}"]\n{old} = true\n',
            "node:Thing",
            [A + f"rename:gdscript_properties_renames:{old}"],
            PROMPTS[len(cases) % len(PROMPTS)],
        )


sampled_renames()
sampled_scene_renames()
# After the sampled cases: a case added before them would shift the prompts they are given.
connection("d-conn-tween", "Tween", "tween_completed", [A + "change:tween-completed"])
connection("d-conn-popup", "PopupMenu", "about_to_show", [A + "rename:gdscript_signals_renames:about_to_show"])
connection("d-conn-dialog", "ConfirmationDialog", "cancelled", [A + "rename:gdscript_signals_renames:cancelled"])
connection("d-conn-tabs", "Tabs", "tab_close", [A + "rename:gdscript_signals_renames:tab_close"])
# A built-in script: its code's engine names are the sub-resource's search terms.
direct(
    "d-builtin-script-g3",
    "player.tscn",
    "[gd_scene load_steps=3 format=2]\n\n"
    '[sub_resource type="GDScript" id=1]\n'
    'script/source = "extends KinematicBody2D\n\nvar velocity = Vector2()\n\n'
    "func _physics_process(delta):\n"
    "\tvelocity = move_and_slide(velocity, Vector2.UP)\n"
    '\tif is_on_floor() and Input.is_action_just_pressed(\\"jump\\"):\n'
    "\t\tvelocity.y = -400\n"
    '\t$AnimatedSprite.play(\\"run\\")\n'
    '\tyield(get_tree().create_timer(1.0), \\"timeout\\")\n"\n\n'
    '[node name="Player" type="KinematicBody2D"]\nscript = SubResource( 1 )\n',
    "sub_resource:1",
    [A + "change:move-and-slide", A + "change:kinematicbody2d|" + A + "rename:class_renames:KinematicBody2D"],
)

if __name__ == "__main__":
    out = HERE / "cases.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        for c in cases:
            fh.write(json.dumps(c, ensure_ascii=False) + "\n")
    by_cat: dict[str, int] = {}
    for c in cases:
        by_cat[c["category"]] = by_cat.get(c["category"], 0) + 1
    print(f"{len(cases)} cases -> {out}: {by_cat}")
