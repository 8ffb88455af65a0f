"""The project symbol index: scripts, scenes and autoloads, per-file scopes, JSON, hostile input."""

from __future__ import annotations

import random

import pytest

from godot_rag.domain.judging.project_index import (
    FileScope,
    ProjectIndex,
    build_scopes,
    mask_gdscript,
    scan_autoloads,
    scan_scene,
    scan_script,
    scope_from_json,
)

BASE = """extends Control
class_name BasePanel

signal opened(which)
const Painter = preload("res://tools/painter.gd")
const Scene = preload("res://ui/item.tscn")
enum Mode { A, B }
export(int) var size = 3
onready var title: Label = $Title
var _painter := Painter.new()
var _other = "func not_a_member(): pass"  # func also_not_one()
var _items = [
	1,
	func_like,
]


func open(which):
	var local_only = 1
	emit_signal("opened", which)


static func make() -> BasePanel:
	return null


class Inner extends Reference:
	var depth := 0

	func inner_method():
		pass
"""

PAINTER = """extends Node

func set_image(image, texture):
	pass

func build(size):
	pass
"""

CHILD = """extends "res://ui/base_panel.gd"

var ref: Inner


func grow():
	rect_size *= 2
"""

SCENE = """[gd_scene load_steps=3 format=2]

[ext_resource path="res://ui/child_panel.gd" type="Script" id=1]
[ext_resource path="res://ui/item.tscn" type="PackedScene" id=2]

[node name="Root" type="Control"]

[node name="Panel" type="Panel" parent="."]
script = ExtResource( 1 )

[node name="Title" type="Label" parent="Panel"]

[node name="Sprite" type="AnimatedSprite" parent="Panel/Title"]
unique_name_in_owner = true

[node name="Item" parent="Panel" instance=ExtResource( 2 )]
"""

ITEM = """[gd_scene format=3 uid="uid://abc"]

[ext_resource type="Script" path="res://ui/item.gd" id="1_x"]

[node name="Item" type="Button"]
script = ExtResource("1_x")
"""

PROJECT = """config_version=4

[autoload]

Log="*res://tools/log.gd"
Hud="*res://ui/item.tscn"
bad name="*res://x.gd"

[display]

window/size/width=10
"""


@pytest.fixture(scope="module")
def project():
    files = [
        ("ui/base_panel.gd", BASE),
        ("tools/painter.gd", PAINTER),
        ("ui/child_panel.gd", CHILD),
        ("ui/main.tscn", SCENE),
        ("ui/item.tscn", ITEM),
        ("ui/item.gd", "extends Button\n\nfunc press():\n\tpass\n"),
        ("tools/log.gd", "extends Node\n\nfunc error(msg):\n\tprint(msg)\n"),
        ("project.godot", PROJECT),
    ]
    return build_scopes(files)


def test_a_script_lists_its_own_declarations_only():
    s = scan_script("ui/base_panel.gd", BASE)
    assert s.class_name == "BasePanel" and s.extends == "T:Control"
    assert s.members == {
        "opened": "signal",
        "Painter": "const",
        "Scene": "const",
        "Mode": "enum",
        "A": "const",
        "B": "const",
        "size": "var",
        "title": "var",
        "_painter": "var",
        "_other": "var",
        "_items": "var",
        "open": "func",
        "make": "func",
        "Inner": "class",
    }
    assert s.member_types["Painter"] == "P:tools/painter.gd" and s.member_types["Scene"] == "S:ui/item.tscn"
    assert s.member_types["title"] == "T:Label" and s.member_types["_painter"] == "T:Painter"
    assert "local_only" not in s.members and "not_a_member" not in s.members and "also_not_one" not in s.members
    assert s.inner["Inner"].extends == "T:Reference" and set(s.inner["Inner"].members) == {"depth", "inner_method"}


def test_signals_and_declared_value_types_reach_the_scope():
    files = [
        (
            "bus.gd",
            "class_name Bus\nextends Node\n\nsignal report(x)\nvar level: Level\n\n"
            "static func instance() -> Bus:\n\treturn null\n\n\nfunc nothing() -> void:\n\tpass\n",
        ),
        ("level.gd", "class_name Level\nextends Node2D\n"),
        ("user.gd", "extends Node\n\nfunc f():\n\tBus.instance().report.emit(1)\n"),
    ]
    index, scopes = build_scopes(files)
    whole = index.scope_for("user.gd")
    bus = whole.types["script:bus.gd"]
    assert bus.signals == {"report"}
    assert bus.value_types == {"instance": "script:bus.gd", "level": "script:level.gd"}  # void returns nothing
    assert "script:level.gd" in whole.types  # one level of the types a visible type's members hold
    # With the file's text, only what it mentions: instance and report, not level.
    scope = scopes["user.gd"]
    assert scope.types["script:bus.gd"].value_types == {"instance": "script:bus.gd"}
    assert scope.types["script:bus.gd"].signals == {"report"} and "script:level.gd" not in scope.types


def test_godot4_one_line_class_name_and_annotations():
    s = scan_script(
        "a.gd",
        "class_name Foo extends Node2D\n\n@export var speed := 1.0\n@onready var s := $S as Sprite2D\n"
        "static var count: int\n\nfunc _ready() -> void:\n\tpass\n",
    )
    assert s.class_name == "Foo" and s.extends == "T:Node2D"
    assert s.members == {"speed": "var", "s": "var", "count": "var", "_ready": "func"}
    assert s.member_types["s"] == "T:Sprite2D" and s.member_types["count"] == "T:int"


@pytest.mark.parametrize(
    "line,ref",
    [
        ("var x = $Sprite", "N:Sprite"),
        ("var x = $Sprite.texture", ""),  # a member of the node: not known here
        ('var x = $"A/B"', "N:A/B"),
        ('var x := get_node("A")', "N:A"),
        ('var x = get_node("A").b', ""),
        ('var x := preload("b.gd").new()', "P:ui/b.gd"),  # relative to the script's folder
        ('var x = preload("res://s.tscn")', "S:s.tscn"),
        ('var x = preload("res://s.tscn").instance()', ""),
        ("var x = Foo.new()", "T:Foo"),
        ("var x = Foo.new().bar()", ""),
        ("var x = f(a as B)", ""),  # a cast inside the call is not the variable's type
        ("var x = g() as Sprite", "T:Sprite"),
        ("var x: Array[Foo] = []", "T:Array"),
    ],
)
def test_declared_and_inferred_types(line, ref):
    assert scan_script("ui/a.gd", line + "\n").member_types.get("x", "") == ref


def test_scene_nodes_types_scripts_and_instances():
    nodes = {n.path: n for n in scan_scene("ui/main.tscn", SCENE)}
    assert nodes[""].type == "Control"
    assert nodes["Panel"].script == "ui/child_panel.gd"
    assert nodes["Panel/Title/Sprite"].type == "AnimatedSprite" and nodes["Panel/Title/Sprite"].unique
    assert nodes["Panel/Item"].instance == "ui/item.tscn" and nodes["Panel/Item"].type == ""
    item = scan_scene("ui/item.tscn", ITEM)
    assert item[0].script == "ui/item.gd"


def test_autoloads_from_project_godot():
    assert scan_autoloads(PROJECT) == {"Log": "tools/log.gd", "Hud": "ui/item.tscn"}


def test_a_scope_resolves_the_chain_the_scenes_and_the_autoloads(project):
    index, scopes = project
    child = index.scope_for("ui/child_panel.gd")  # without its text: nothing left out for not being mentioned
    me = child.types[child.self_key]
    assert me.engine_base == "Control"  # through the project's base_panel.gd
    assert {"open", "make", "title", "_painter"} <= me.members
    assert child.member_types["title"] == "Label"
    assert child.member_types["_painter"] == "script:tools/painter.gd"
    assert child.types["script:tools/painter.gd"].members == {"set_image", "build"}
    assert child.names["Inner"] == "script:ui/base_panel.gd::Inner"
    assert child.names["Painter"] == "script:tools/painter.gd"
    # Node paths are relative to the node that attaches the script.
    assert child.nodes["Title"].type_key == "Label" and child.nodes["Title"].origin == "ui/main.tscn"
    assert child.nodes["Title/Sprite"].type_key == "AnimatedSprite"
    assert child.nodes["%Sprite"].type_key == "AnimatedSprite"
    assert child.nodes["Item"].type_key == "script:ui/item.gd"  # the instanced scene's root script
    assert child.owner is not None and child.owner.type_key == "Control"
    # With its text, only names the file mentions: grow() mentions neither Log nor any painter member.
    mentioned = scopes["ui/child_panel.gd"]
    assert "Log" not in mentioned.names and "set_image" not in mentioned.project_names
    assert mentioned.types[mentioned.self_key].members == {"Inner", "grow", "ref"}
    log_user = ProjectIndex.build(
        [
            ("a.gd", "extends Node\n\nfunc f():\n\tLog.error(1)\n"),
            ("tools/log.gd", "func error(m):\n\tpass\n"),
            ("project.godot", PROJECT),
        ]
    ).scope_for("a.gd", "extends Node\n\nfunc f():\n\tLog.error(1)\n")
    assert log_user.names["Log"] == "script:tools/log.gd" and "error" in log_user.project_names


def test_two_scenes_that_type_a_path_differently_leave_it_unresolved():
    s1 = (
        '[gd_scene format=2]\n[ext_resource path="res://a.gd" type="Script" id=1]\n[node name="R" type="Node"]\nscript = ExtResource( 1 )\n'
        '[node name="X" type="Sprite" parent="."]\n'
    )
    s2 = s1.replace('type="Sprite"', 'type="Label"')
    scope = ProjectIndex.build([("a.gd", "extends Node\n"), ("one.tscn", s1), ("two.tscn", s2)]).scope_for("a.gd")
    assert "X" not in scope.nodes
    same = ProjectIndex.build([("a.gd", "extends Node\n"), ("one.tscn", s1), ("two.tscn", s1)]).scope_for("a.gd")
    assert same.nodes["X"].type_key == "Sprite"


def test_index_and_scope_survive_json(project):
    index, scopes = project
    again = ProjectIndex.from_json(index.to_json())
    assert again.to_json() == index.to_json()
    for path, scope in scopes.items():
        assert FileScope.from_json(scope.to_json()).to_json() == scope.to_json()
        assert again.scope_for(path).self_key == scope.self_key
    assert scope_from_json("") is None
    assert FileScope.from_json("{not json").known is False
    assert ProjectIndex.from_json('{"version": "other"}').scripts == {}
    # Well-formed JSON of the wrong shape is no scope either, never an exception.
    assert FileScope.from_json('{"version": "symbols/3", "types": {"x": {"members": 5}}}').known is False
    assert ProjectIndex.from_json('{"version": "symbols/3", "scripts": {"a.gd": {"inner": {"I": 3}, "members": 1}}}').scripts == {}


def test_masking_keeps_length_and_lines():
    text = 'var a = "x # y" # comment\nvar b = """multi\nline""" + \'q\'\n'
    mask = mask_gdscript(text)
    assert len(mask) == len(text) and mask.count("\n") == text.count("\n")
    assert "comment" not in mask and "multi" not in mask and "var b" in mask


def test_an_extends_cycle_ends():
    index = ProjectIndex.build([("a.gd", 'extends "res://b.gd"\n'), ("b.gd", 'extends "res://a.gd"\n')])
    keys, engine = index.chain("script:a.gd")
    assert keys == ["script:a.gd", "script:b.gd"] and engine == ""


@pytest.mark.parametrize("seed", range(6))
def test_hostile_input_never_raises(seed):
    rng = random.Random(seed)
    alphabet = 'extends class_name func var const signal class $%"\'#()[]{}:=.\\\n\t @res://ExtResource( 1 )[node name="'
    texts = ["".join(rng.choice(alphabet) for _ in range(3000)) for _ in range(3)]
    texts.append("(" * 5000 + "var x = 1\n")
    texts.append('var s = "unterminated\nfunc f(:\n\t' + "a." * 2000 + "\n")
    texts.append('[node name="A" parent="' + "x/" * 2000 + '"]\nscript = ExtResource(\n')
    files = []
    for i, t in enumerate(texts):
        files += [(f"s{i}.gd", t), (f"s{i}.tscn", t)]
    files.append(("project.godot", "[autoload]\n" + texts[0]))
    index, scopes = build_scopes(files)
    assert set(scopes) == {p for p, _ in files if p.endswith(".gd")}
    for scope in scopes.values():
        assert FileScope.from_json(scope.to_json()).self_key == scope.self_key
