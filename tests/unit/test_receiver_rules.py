"""Member evidence from resolved receivers only, and the migration notes the resolution completes."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from godot_rag import convert
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.judging import rules
from godot_rag.domain.judging.contract import ContractScope, from_judgment, validate
from godot_rag.domain.judging.project_index import build_scopes
from godot_rag.domain.judging.rules import REMOVED_IN_GODOT4, declared_names, judge_chunk
from godot_rag.pipeline.submit import project_symbols


@pytest.fixture(scope="module")
def ev(repo):
    spec = importlib.util.spec_from_file_location("eval_judge", repo / "benchmarks" / "eval_judge.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["eval_judge"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def knowledge(ev):
    return ev.load_knowledge()


def judge_project(files: dict[str, str], knowledge, with_index: bool = True) -> dict[str, dict]:
    """Every chunk of every script, judged with (or without) the project's index: {path: {chunk key: judgment}}."""
    _, scopes = build_scopes(files.items())
    out: dict[str, dict] = {}
    for path, text in files.items():
        if not path.endswith(".gd"):
            continue
        result = parse_gdscript(path, text.encode())
        declared = declared_names(result.chunks)
        scope = scopes.get(path) if with_index else None
        out[path] = {
            c.chunk_id.split(":", 1)[1]: judge_chunk(c, "gdscript", [], knowledge.index, declared, scope) for c in result.chunks
        }
    return out


def judge_script(source: str, knowledge, with_index: bool = True) -> dict:
    """The chunks of one script `a.gd`, judged as ``judge_project`` does: {chunk key: judgment}."""
    return judge_project({"a.gd": source}, knowledge, with_index)["a.gd"]


def test_the_receivers_corpus_meets_the_targets_only_with_the_index(ev, knowledge):
    with_index = ev.load_cases(ev.CORPUS / "receivers")
    assert len(with_index) >= 35 and all(c.scope is not None and c.scope.known for c in with_index)
    m, misses, _ = ev.evaluate_rules(with_index, knowledge)
    assert m["accuracy"] >= ev.TARGET_ACCURACY, misses
    assert m["neutral_false_positive_rate"] == 0.0, misses
    # The same functions judged from their chunk alone flag neutral ones: the index is what decides.
    without = ev.load_cases(ev.CORPUS / "receivers", project_index=False)
    m0, _, _ = ev.evaluate_rules(without, knowledge)
    assert m0["neutral_false_positive_rate"] >= 0.15 and m0["accuracy"] < m["accuracy"] - 0.1


def test_every_judgment_on_the_receivers_corpus_satisfies_the_contract(ev, knowledge):
    for case in ev.load_cases(ev.CORPUS / "receivers"):
        hits = ev.offline_hits(case.chunk, knowledge)
        j = judge_chunk(case.chunk, "gdscript", hits, knowledge.index, case.declared, case.scope)
        scope = ContractScope(
            tuple((h.table_name, h.record_id) for h in hits),
            case.chunk.span.start_line,
            case.chunk.span.end_line,
            extra_basis_ids=knowledge.index.record_ids,
        )
        assert validate(from_judgment(j), scope) == [], case.chunk.chunk_id


LIB = """extends Reference
class_name Lib

static func instance():
	return null

func error(msg):
	pass

func build(n):
	pass

func set_image(a, b):
	pass

func return_type():
	return ""
"""

USER = """extends Node

const Painter = preload("res://painter.gd")

var lib: Lib


func typed_var():
	var p: Painter = Painter.new()
	p.set_image(1, 2)


func constructor():
	var l := Lib.new()
	l.error("x")
	return l.return_type()


func static_accessor():
	return Lib.instance()


func member_var():
	lib.error("y")


func engine_scene(s: PackedScene):
	return s.instance()


func engine_texture(img: Image):
	var t := ImageTexture.new()
	t.set_image(img)
"""


@pytest.fixture(scope="module")
def traps(knowledge):
    files = {
        "lib.gd": LIB,
        "painter.gd": "extends Node\n\nfunc set_image(a, b):\n\tpass\n\nfunc build(n):\n\tpass\n",
        "user.gd": USER,
    }
    return judge_project(files, knowledge), judge_project(files, knowledge, with_index=False)


@pytest.mark.parametrize(
    "key,misleads_alone",
    [
        ("function:typed_var", False),  # `p: Painter` names no engine class: a project class even without the index
        ("function:constructor", False),
        ("function:static_accessor", True),  # Lib.instance(): only the index knows Lib
        ("function:member_var", True),  # `lib` is typed in another chunk
    ],
)
def test_project_members_named_like_engine_members_give_no_signal(traps, key, misleads_alone):
    with_index, without = traps
    j = with_index["user.gd"][key]
    assert j.signal == "neutral", j.explanation
    assert "the project's own member" in j.explanation
    assert (without["user.gd"][key].signal != "neutral") == misleads_alone, without["user.gd"][key].explanation


def test_the_same_names_on_engine_receivers_still_count(traps):
    with_index, _ = traps
    scene = with_index["user.gd"]["function:engine_scene"]
    assert scene.signal == "godot3" and "receiver `s`: PackedScene" in scene.explanation
    texture = with_index["user.gd"]["function:engine_texture"]
    assert texture.signal == "godot4" and "receiver `t`: ImageTexture" in texture.explanation


def test_a_declaration_of_an_engine_named_member_is_no_evidence(traps):
    with_index, _ = traps
    for key in ("function:error", "function:build", "function:set_image", "function:return_type", "function:instance"):
        assert with_index["lib.gd"][key].signal == "neutral", key


G3_SCENE = """[gd_scene load_steps=3 format=2]

[ext_resource path="res://player.gd" type="Script" id=1]
[ext_resource path="res://feet.gd" type="Script" id=2]

[node name="Player" type="KinematicBody2D"]
script = ExtResource( 1 )

[node name="AnimatedSprite" type="AnimatedSprite" parent="."]

[node name="Sprite" type="Sprite" parent="."]

[node name="Feet" type="Node2D" parent="."]
script = ExtResource( 2 )
"""

G3_PLAYER = """extends KinematicBody2D


func animate():
	$AnimatedSprite.playing = true
	$AnimatedSprite.frames = null


func shade(tex):
	$Sprite.normal_map = tex


func redraw():
	update()


func title():
	OS.set_window_title("x")
"""

G3_FEET = """extends Node2D


func push(v):
	owner.move_and_slide(v)
"""

G3_PANEL = """extends Control


func _ready():
	._ready()
	rect_min_size = Vector2(4, 4)


func grow():
	self.rect_size *= 2
"""

G3_SPATIAL = """extends Spatial


func to_world(v):
	return global_transform.xform(v)
"""


@pytest.fixture(scope="module")
def godot3(knowledge):
    files = {"player.gd": G3_PLAYER, "feet.gd": G3_FEET, "panel.gd": G3_PANEL, "mover.gd": G3_SPATIAL, "player.tscn": G3_SCENE}
    return judge_project(files, knowledge)


def _notes(j):
    return {n.old: n for n in j.migration_notes}


def test_animated_sprite_members_resolve_through_the_scene(godot3):
    j = godot3["player.gd"]["function:animate"]
    assert j.signal == "godot3"
    assert "receiver `$AnimatedSprite`: AnimatedSprite, from player.tscn" in j.explanation
    notes = _notes(j)
    assert notes["playing"].basis_record_id == "change:animatedsprite-playing"
    assert notes["frames"].new == "sprite_frames"


def test_a_removed_member_cites_its_class_reference_record_without_a_replacement(godot3):
    j = godot3["player.gd"]["function:shade"]
    assert j.signal == "godot3"
    note = _notes(j)["normal_map"]
    assert note.new == REMOVED_IN_GODOT4 and note.basis_record_id == "docs:3:Sprite.normal_map"


@pytest.mark.parametrize(
    "path,key,old,new,basis",
    [
        ("player.gd", "function:redraw", "update", "CanvasItem.queue_redraw()", "change:update-queue-redraw"),
        ("player.gd", "function:title", "OS.set_window_title", "DisplayServer.window_set_title", "docs:3:OS.set_window_title"),
        ("feet.gd", "function:push", "move_and_slide(velocity)", "velocity = ...; move_and_slide()", "change:move-and-slide"),
        ("panel.gd", "function:_ready", "._ready(", "super._ready(", "change:super-call"),
        ("panel.gd", "function:_ready", "rect_min_size", "custom_minimum_size", "change:rect-properties"),
        ("mover.gd", "function:to_world", "xform", "transform * v", "change:xform"),
        ("panel.gd", "function:grow", "rect_size", "size", "rename:gdscript_properties_renames:rect_size"),
    ],
)
def test_migration_notes_for_each_class_of_change(godot3, path, key, old, new, basis):
    j = godot3[path][key]
    assert j.signal == "godot3" and j.needs_migration, j.explanation
    note = _notes(j)[old]
    assert (note.new, note.basis_record_id) == (new, basis)


def test_owner_resolves_to_the_root_of_the_scene(godot3):
    assert "receiver `owner`: the root of player.tscn" in godot3["feet.gd"]["function:push"].explanation


def test_a_godot4_method_chain_is_not_a_parent_call(knowledge):
    src = "extends Node\n\n\nfunc f():\n\tvar t = (create_tween()\n\t\t.set_loops())\n\treturn t\n"
    assert judge_project({"a.gd": src}, knowledge)["a.gd"]["function:f"].signal == "neutral"


@pytest.mark.parametrize(
    "body,signal,at_most",
    [
        # instance() and emit() are both member names on receivers nothing resolves: neither wins.
        ("var n = thing.instance(); finished.emit(n)", "neutral", 0.5),
        # yield( is syntax only Godot 3 parses; emit() is a member name: syntax wins, and the name costs it a quarter.
        ('yield(get_tree(), "idle_frame"); finished.emit(1)', "godot3", 0.8),
    ],
)
def test_conflicting_evidence_is_no_confident_minority_label(knowledge, body, signal, at_most):
    src = f"extends Node\n\nsignal finished(x)\n\n\nfunc f(thing):\n\t{body}\n"
    j = judge_project({"a.gd": src}, knowledge)["a.gd"]["function:f"]
    assert j.signal == signal and j.confidence <= at_most, j.explanation


def test_a_project_defined_instance_leaves_emit_alone(knowledge):
    files = {
        "pool.gd": "class_name Pool\nextends Node\n\nstatic func instance():\n\treturn null\n",
        "a.gd": "extends Node\n\nsignal done\n\n\nfunc f():\n\tPool.instance(); done.emit()\n",
    }
    j = judge_project(files, knowledge)["a.gd"]["function:f"]
    assert j.signal == "godot4" and j.confidence >= 0.8, j.explanation


def test_submission_computes_scopes_only_for_scripts(repo):
    from godot_rag.domain.ingest.policy import scan_folder

    files = scan_folder(repo / "samples" / "godot3_project", max_bytes=2 << 20)
    index_json, scopes = project_symbols(files)
    assert index_json and set(scopes) == {f.source_file for f in files if f.source_kind == "gdscript" and f.included}
    assert '"Globals"' in scopes["player.gd"]  # the autoload the script uses
    no_scripts = [f for f in files if f.source_kind != "gdscript"]
    assert project_symbols(no_scripts) == ("", {})


def test_the_rules_backend_reads_the_scope_and_keys_judgments_by_it(knowledge):
    from dataclasses import replace

    from godot_rag.domain.judging.backends import RulesBackend, judgment_key
    from godot_rag.domain.models import JudgmentRequest

    backend = RulesBackend(knowledge.index)
    _, scopes = build_scopes({"lib.gd": LIB, "user.gd": USER}.items())
    chunk = next(c for c in parse_gdscript("user.gd", USER.encode()).chunks if c.name == "static_accessor")
    request = JudgmentRequest(
        prompt="Godot 3 or 4?", chunk=chunk, evidence=(), source_kind="gdscript", project_symbols=scopes["user.gd"].to_json()
    )
    bare = replace(request, project_symbols="")
    assert backend.judge_now(request).signal == "neutral"
    assert backend.judge_now(bare).signal == "godot3"  # without the index, Lib.instance() reads as PackedScene's
    assert judgment_key(request, backend) != judgment_key(bare, backend)
    # The field survives the wire.
    assert convert.request_from_pb(convert.request_to_pb(request)).project_symbols == request.project_symbols


def test_a_signal_reached_through_a_typed_accessor_is_a_signal_even_when_the_project_defines_emit(knowledge):
    files = {
        "bus.gd": "class_name Bus\nextends Node\n\nsignal report(x)\n\n\nstatic func instance() -> Bus:\n\treturn null\n\n\n"
        "func emit(x):\n\tpass\n",
        "user.gd": "extends Node\n\nsignal done\n\n\nfunc send(r):\n\tBus.instance().report.emit(r)\n\n\n"
        "func forward(r):\n\tBus.instance().emit(r)\n\n\nfunc finish():\n\tdone.emit()\n",
    }
    judged = judge_project(files, knowledge)["user.gd"]
    send = judged["function:send"]
    assert send.signal == "godot4" and "a signal of class_name Bus in bus.gd" in send.explanation, send.explanation
    assert judged["function:forward"].signal == "neutral"  # the project's own emit()
    finish = judged["function:finish"]
    assert finish.signal == "godot4" and "a signal the script declares" in finish.explanation, finish.explanation


@pytest.mark.parametrize(
    "code,old,new,basis",
    [
        ("var f = FuncRef.new()", "FuncRef", "Callable", "docs:3:FuncRef"),  # a known replacement, on the class's record
        ("var n = Navigation2D.new()", "Navigation2D", REMOVED_IN_GODOT4, "docs:3:Navigation2D"),  # none recorded
    ],
)
def test_a_godot3_class_without_a_rename_gets_a_note(knowledge, code, old, new, basis):
    j = judge_project({"a.gd": f"extends Node\n\n\nfunc f():\n\t{code}\n"}, knowledge)["a.gd"]["function:f"]
    assert j.signal == "godot3"
    note = _notes(j)[old]
    assert (note.new, note.basis_record_id) == (new, basis)


def test_names_only_editor_classes_declare_and_declared_parameters_are_no_evidence(knowledge):
    files = {
        "worker.gd": "extends Control\n\nsignal resized(size)\n\nvar queue\n\n\nfunc run_once():\n\tvar job = queue.pop_job()\n"
        "\treturn job.build()\n"
    }
    judged = judge_project(files, knowledge)["worker.gd"]
    assert judged["function:run_once"].signal == "neutral", judged["function:run_once"].explanation  # EditorPlugin.build only
    assert judged["signal:resized"].signal == "neutral"  # a parameter named like Control.size


def test_underscore_names_called_on_unknown_objects_are_the_projects_helpers_not_engine_virtuals(knowledge):
    # Godot 4 declares _save, _load, _start, _reload, _update, _seek... as virtual methods of extension classes;
    # a script of a partial project (or a pasted one) that calls its own helpers by those names is no Godot 4 code.
    files = {
        "menu.gd": 'extends "res://base_menu.gd"\n\n\nfunc _on_SaveButton_pressed():\n\t_save()\n\tgame_state._load()\n'
        "\t$Player._start()\n\tarsenal.values()[current]._reload()\n\tweapon._update(0.1)\n",
        "video.gd": "extends Node\n\n\nfunc scrub(player):\n\tplayer._seek(0.0)\n\tplayer._stop()\n",
    }
    judged = judge_project(files, knowledge, with_index=False)
    for path, key in (("menu.gd", "function:_on_SaveButton_pressed"), ("video.gd", "function:scrub")):
        assert judged[path][key].signal == "neutral", judged[path][key].explanation
    # A name only one version has, not underscored, still counts on an unknown receiver.
    window = judge_project({"m.gd": "extends Node\n\n\nfunc go(n):\n\tn.get_window()\n"}, knowledge)
    assert window["m.gd"]["function:go"].signal == "godot4", window["m.gd"]["function:go"].explanation


def test_a_renamed_class_godot4_still_has_is_decided_by_the_member_it_qualifies(knowledge):
    # Godot 3's Viewport node is Godot 4's SubViewport, but Godot 4 keeps Viewport as their base class: its
    # constants and enums are Godot 4 code, not a Godot 3 class to rename.
    files = {
        "gfx.gd": "extends Node\n\n\nfunc fsr():\n\treturn Viewport.SCALING_3D_MODE_FSR\n\n\n"
        "func msaa():\n\tvar vp = get_viewport()\n\tvp.msaa_3d = Viewport.MSAA_4X\n\n\n"
        "func both():\n\treturn Viewport.MSAA_4X\n\n\n"
        "func typed() -> void:\n\tvar vp: Viewport = get_viewport()\n\tvp.scaling_3d_mode = 1\n",
        "old.gd": "extends Viewport\n\n\nfunc _ready():\n\tpass\n",
    }
    judged = judge_project(files, knowledge)
    gfx = judged["gfx.gd"]
    assert (gfx["function:fsr"].signal, gfx["function:msaa"].signal) == ("godot4", "godot4"), gfx["function:msaa"].explanation
    assert gfx["function:both"].signal == "neutral", gfx["function:both"].explanation  # MSAA_4X: both versions' Viewport
    assert gfx["function:typed"].signal == "godot4", gfx["function:typed"].explanation  # a Viewport type hint: both
    assert not [n for j in gfx.values() for n in j.migration_notes], "no Viewport -> SubViewport note for Godot 4 code"
    # A script extending Viewport is a Godot 3 Viewport node's: that still counts.
    assert any("`Viewport`" in j.explanation for j in judged["old.gd"].values() if j.signal == "godot3")


def test_a_member_an_engine_typed_receiver_lacks_is_the_projects_when_the_project_declares_it(knowledge):
    # `var gun: Node2D` holds one of the project's item scripts; `init` is no Node2D member in either version, and
    # some Godot 3 class's `init` must not make the call Godot 3 when the project's scripts declare `init`.
    holder = "extends Node2D\n\nvar gun: Node2D\n\n\nfunc arm(owner_node):\n\tgun.init(owner_node)\n"
    item = "extends Node2D\n\n\nfunc init(owner_node: Node2D) -> void:\n\tpass\n"
    judged = judge_project({"holder.gd": holder, "item.gd": item}, knowledge)
    arm = judged["holder.gd"]["function:arm"]
    assert arm.signal == "neutral", arm.explanation
    assert "the project defines one" in arm.explanation
    # Without the project's `init`, the name alone decides (the object is some subclass): a name only one version
    # has counts, but `init` is one of the one-word names projects declare themselves, which count for neither.
    alone = judge_project({"holder.gd": holder}, knowledge)["holder.gd"]["function:arm"]
    assert alone.signal == "neutral", alone.explanation
    lacking = holder.replace("gun.init(owner_node)", "gun.get_cellv(Vector2.ZERO)")  # a Godot 3 TileMap's
    other = judge_project({"holder.gd": lacking}, knowledge)["holder.gd"]["function:arm"]
    assert other.signal == "godot3", other.explanation


def test_one_word_names_projects_declare_themselves_are_no_evidence_on_unknown_objects(knowledge):
    """`enemy.speed`, `main.next()`, `vfx.init(...)`, `machine.process(delta)`: a pasted script (or a partial
    project) calling such names on an object it cannot name calls the project's own members."""
    snippet = (
        'extends Node\n\nonready var main = get_node("../Main")\nvar current_state = null\n\n\n'
        "func _process(delta):\n\tvar enemy = Enemy.instance()\n\tenemy.speed = 4.0\n\tmain.next()\n"
        "\tvar effect = effect_scene.instantiate()\n\teffect.init(position)\n\tcurrent_state.process(delta)\n"
    )
    judged = judge_project({"snippet.gd": snippet}, knowledge)
    verdict = judged["snippet.gd"]["function:_process"]
    for word in ("speed", "next", "init", "process"):
        assert f"member `{word}`" not in verdict.explanation, verdict.explanation
    # `instance()` and `instantiate()` on unknown objects still count, each for its version.
    assert "instance()" in verdict.explanation and "instantiate()" in verdict.explanation
    # The engine's own one-word idioms still count on unknown objects.
    for code, signal in (
        ("var e = scene.instance()", "godot3"),
        ("var hit = collision.collider", "godot3"),
        ("died.emit()", "godot4"),
        ("var alive = enemies.filter(is_alive)", "godot4"),
    ):
        one = judge_project({"o.gd": f"extends Node\n\n\nfunc f(scene, collision, died, enemies):\n\t{code}\n"}, knowledge)
        assert one["o.gd"]["function:f"].signal == signal, (code, one["o.gd"]["function:f"].explanation)


def test_move_and_slide_with_snap_on_any_object_is_godot3_unless_the_project_declares_it(knowledge):
    # No Godot 4 class has it: called on an object the judge cannot name it is Godot 3 as when called bare.
    for code in ("body.move_and_slide_with_snap(v, Vector2.DOWN, Vector2.UP)", "move_and_slide_with_snap(v, snap, up)"):
        judged = judge_project({"a.gd": f"extends Node2D\n\n\nfunc f(body, v, snap, up):\n\t{code}\n"}, knowledge)
        assert judged["a.gd"]["function:f"].signal == "godot3", (code, judged["a.gd"]["function:f"].explanation)
    # A project class that declares its own is the project's.
    files = {
        "a.gd": "extends Node2D\n\nvar mover: Mover\n\n\nfunc f(v):\n\tmover.move_and_slide_with_snap(v)\n",
        "m.gd": "class_name Mover\nextends Node\n\n\nfunc move_and_slide_with_snap(v):\n\tpass\n",
    }
    own = judge_project(files, knowledge)["a.gd"]["function:f"]
    assert own.signal == "neutral" and "the project's own member" in own.explanation, own.explanation


def test_a_godot3_member_on_a_class_only_godot4_names_is_no_evidence(knowledge):
    # Godot 4.0 had NavigationAgent3D.time_horizon and NavigationServer3D.agent_set_callback; 4.1 removed them, so
    # the 4.4 reference has them only on Godot 3's NavigationAgent / NavigationServer. Code that names the Godot 4
    # class is not Godot 3 code.
    source = (
        "extends CharacterBody3D\n\n@onready var agent: NavigationAgent3D = $NavigationAgent3D\n\n\n"
        "func setup():\n\tagent.time_horizon = 2.0\n\tagent.ignore_y = true\n\n\n"
        'func server(a):\n\tNavigationServer3D.agent_set_callback(a, self, "_on_v")\n\n\n'
        "func goal(p):\n\tagent.set_target_location(p)\n"
    )
    judged = judge_script(source, knowledge)
    setup = judged["function:setup"]
    assert setup.signal == "neutral" and "a class only Godot 4 names" in setup.explanation, setup.explanation
    assert "`time_horizon` on NavigationAgent3D" in setup.explanation
    server = judged["function:server"]
    assert server.signal == "godot4" and "`agent_set_callback` on NavigationServer3D" in server.explanation, server.explanation
    goal = judged["function:goal"]
    assert goal.signal == "neutral" and "renamed `set_target_position`" in goal.explanation, goal.explanation
    # The same members on Godot 3's classes stay Godot 3 evidence.
    source3 = (
        "extends KinematicBody\n\nonready var agent: NavigationAgent = $NavigationAgent\n\n\n"
        "func setup():\n\tagent.time_horizon = 2.0\n\n\n"
        'func server(a):\n\tNavigationServer.agent_set_callback(a, self, "_on_v")\n'
    )
    judged3 = judge_script(source3, knowledge)
    assert judged3["function:setup"].signal == "godot3", judged3["function:setup"].explanation
    assert judged3["function:server"].signal == "godot3", judged3["function:server"].explanation


def test_names_godot4_0_had_as_well_are_no_evidence():
    page = (
        "Change    GDScript Compatible\n"
        "=====   =====\n"
        "**PathFollow2D**\n"
        "Property ``lookahead`` removed                       |❌|      |❌|     `GH-72842`_\n"
        "**TileMap**\n"
        "Property ``cell_quadrant_size`` renamed to ``rendering_quadrant_size``     |❌|   `GH-81070`_\n"
        "=====   =====\n\n"
        "Change    GDScript Compatible\n"
        "Method ``orphan`` removed                             |❌|      `GH-1`_\n"
    )
    changes = rules.later_godot4_changes_of([("4.1", page)])
    assert changes == {
        ("PathFollow2D", "lookahead"): "removed in Godot 4.1",
        ("TileMap", "cell_quadrant_size"): "renamed to `rendering_quadrant_size` in Godot 4.1",
    }
    # The shipped guides: 4.1 to 4.4.
    shipped = rules.later_godot4_changes()
    assert shipped[("NavigationAgent2D", "time_horizon")].endswith("in Godot 4.1")
    assert shipped[("AnimationPlayer", "playback_process_mode")].endswith("in Godot 4.2")


def test_a_member_a_later_godot4_removed_is_no_evidence_on_its_class(knowledge):
    # PathFollow2D.lookahead and AnimationPlayer.playback_active are in Godot 3.6 and in Godot 4.0/4.1, gone from
    # 4.4's reference: a Godot 4.0 project that uses them is not Godot 3 code.
    source = (
        "extends AnimationPlayer\n\nvar follow: PathFollow2D\nvar anim: AnimationPlayer\n\n\n"
        "func f():\n\tfollow.lookahead = 4.0\n\n\n"
        "func g():\n\tanim.playback_active = true\n\tplayback_process_mode = 0\n\n\n"
        "func h():\n\tfollow.offset = 3.0\n"
    )
    judged = judge_script(source, knowledge)
    f = judged["function:f"]
    assert f.signal == "neutral" and "`lookahead` of PathFollow2D: Godot 3 and early Godot 4" in f.explanation, f.explanation
    assert "removed in Godot 4.1" in f.explanation
    g = judged["function:g"]
    assert g.signal == "neutral" and "`playback_active` of AnimationPlayer" in g.explanation, g.explanation
    assert "`playback_process_mode` of AnimationPlayer" in g.explanation
    # A Godot 3 name Godot 4.0 had renamed already stays Godot 3 evidence.
    assert judged["function:h"].signal == "godot3", judged["function:h"].explanation


def test_a_member_variable_holding_a_dictionary_literal_reads_keys(knowledge):
    # GUT's settings panel: `var _cfg_ctrls = {}` then `_cfg_ctrls.resolution.disabled` (a key, not Godot 4's
    # `resolution` property), and `var names = []` then `names.empty()` (Godot 3's Array method, now resolved).
    source = (
        "extends Control\n\nvar _cfg_ctrls = {}\nvar names = []\n\n\n"
        "func show_controls(should):\n\t_cfg_ctrls.resolution.disabled = !should\n\n\n"
        "func is_done():\n\treturn names.empty()\n"
    )
    judged = judge_script(source, knowledge)
    assert judged["function:show_controls"].signal == "neutral", judged["function:show_controls"].explanation
    done = judged["function:is_done"]
    assert done.signal == "godot3" and "[receiver `names`: Array]" in done.explanation, done.explanation


def test_properties_of_an_object_the_chunk_shows_to_be_the_projects_are_no_evidence(knowledge):
    # `options` is a parameter: nothing types it, but the chunk reads `options.panel_options`, which no engine
    # class has, so `font_name` / `font_size` (Godot 4 names) are the project's keys.
    source = (
        "extends Control\n\n\nfunc fonts(options):\n"
        "\tadd_select('font_name', options.panel_options.font_name)\n\tadd_number('font_size', options.font_size)\n"
    )
    fonts = judge_script(source, knowledge)["function:fonts"]
    assert fonts.signal == "neutral", fonts.explanation
    assert "`options` is the project's object or a dictionary" in fonts.explanation, fonts.explanation
    # Alone, the same property name still counts.
    alone = judge_script("extends Control\n\n\nfunc fonts(options):\n\tprint(options.font_size)\n", knowledge)["function:fonts"]
    assert alone.signal == "godot4", alone.explanation


def test_a_property_of_self_in_a_script_extending_an_unseen_project_class_is_no_evidence(knowledge):
    # Judged alone (a snippet): `extends ServerActor` names a class of the project the judge does not see, so
    # `self.attributes` (a Godot 4 engine name) is that class's property; a call by name alone still counts.
    source = "extends ServerActor\n\n\nfunc _init():\n\tprint(self.attributes.stamina)\n\n\nfunc redraw():\n\tself.queue_redraw()\n"
    judged = judge_script(source, knowledge, with_index=False)
    init = judged["function:_init"]
    assert init.signal == "neutral" and "the script extends `ServerActor`, the project's class" in init.explanation, (
        init.explanation
    )
    assert judged["function:redraw"].signal == "godot4", judged["function:redraw"].explanation


def test_a_godot3_export_hint_types_the_variable(knowledge):
    # `export(NodePath) var next_box`: Godot 3's NodePath has is_empty(), so `next_box.is_empty()` is no sign of
    # Godot 4's String/Array method once the hint types the variable.
    source = (
        "extends Node2D\n\nexport(NodePath) var next_box\n\n\n"
        "func interact():\n\tif !next_box.is_empty() and get_node(next_box):\n\t\tpass\n"
    )
    judged = judge_script(source, knowledge)["function:interact"]
    assert judged.signal == "neutral", judged.explanation


def test_an_accessor_of_a_project_word_on_an_unknown_object_is_no_rename_evidence(knowledge):
    # `get_speed` is InputEventMouseMotion's Godot 3 accessor (renamed get_velocity), and a project's own accessor of
    # its `speed` far more often: on an object of a class the judge cannot see it is no evidence.
    source = "extends Node\n\n@onready var unit: UnitObject = $Unit\n\n\nfunc reset():\n\tunit.current_speed = unit.get_speed()\n"
    judged = judge_script(source, knowledge, with_index=False)["function:reset"]
    assert judged.signal == "neutral", judged.explanation
    # On a resolved InputEventMouseMotion it is still Godot 3's.
    typed = "extends Node\n\n\nfunc _input(event: InputEventMouseMotion):\n\tprint(event.get_speed())\n"
    assert judge_script(typed, knowledge)["function:_input"].signal == "godot3"
