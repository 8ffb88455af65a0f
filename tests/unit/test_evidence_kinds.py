"""What the rules judge says a chunk's evidence rests on: config, syntax, removed_type, api or file_format.

File-driven: the chunks come from the direct chunker and the parser over files of
tests/corpus/, judged with the shipped rename table and class references.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from godot_rag.domain.chunking.direct import chunk_direct
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.judging.rules import declared_names, judge_chunk

CORPUS = "tests/corpus"


@pytest.fixture(scope="module")
def ev(repo):
    spec = importlib.util.spec_from_file_location("eval_judge", repo / "benchmarks" / "eval_judge.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["eval_judge"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def index(ev):
    return ev.load_knowledge().index


def judged_file(repo, index, rel: str, source_kind: str) -> dict:
    """chunk key (kind:name) -> judgment for one corpus file."""
    data = (repo / rel).read_bytes()
    if source_kind == "gdscript":
        result = parse_gdscript(rel, data)
    else:
        result = chunk_direct(rel, source_kind, data)
    declared = declared_names(result.chunks)
    return {c.chunk_id.split(":", 1)[1]: judge_chunk(c, source_kind, [], index, declared) for c in result.chunks}


def judged_text(index, text: str, source_kind: str, name: str) -> dict:
    result = chunk_direct(name, source_kind, text.encode()) if source_kind != "gdscript" else parse_gdscript(name, text.encode())
    declared = declared_names(result.chunks)
    return {c.chunk_id.split(":", 1)[1]: judge_chunk(c, source_kind, [], index, declared) for c in result.chunks}


def test_godot3_file_format_is_file_format_evidence_only(repo, index):
    # A Godot 4 project's scene still in format=2: numeric ids, ExtResource( 1 ).
    judged = judged_file(repo, index, f"{CORPUS}/projects/g4_converted_format2/enemies/bat.tscn", "scene")
    header = judged["header:gd_scene"]
    assert header.signal == "godot3" and header.evidence_kinds == ("godot3:file_format",)
    assert not header.needs_migration and "both versions read it" in header.explanation
    ext = judged["ext_resource:1"]
    assert ext.evidence_kinds == ("godot3:file_format",) and not ext.needs_migration
    # The node holds a Godot 4 type: the content outranks the format it is written in.
    root = judged["node:Bat"]
    assert root.signal == "godot3" and root.evidence_kinds == ("godot3:file_format",)
    sprite = judged["node:Bat/Sprite2D"]
    assert sprite.signal == "godot4" and "godot4:removed_type" in sprite.evidence_kinds
    assert "godot3:file_format" in sprite.evidence_kinds and sprite.confidence > 0.6


def test_godot4_file_format_is_file_format_evidence(repo, index):
    judged = judged_file(repo, index, "samples/godot4_project/player.tscn", "scene")
    header = judged["header:gd_scene"]
    assert header.signal == "godot4" and header.evidence_kinds == ("godot4:file_format",)
    assert "Godot 3 cannot read it" in header.explanation


@pytest.mark.parametrize(
    "rel, key, type_name",
    [
        (f"{CORPUS}/direct/godot3_dodge/hud_font.tres", "header:gd_resource", "DynamicFont"),
        (f"{CORPUS}/direct/godot3_dodge/default_env.tres", "sub_resource:1", "ProceduralSky"),
        (f"{CORPUS}/projects/g3_plain/level.tscn", "node:Level/Player", "KinematicBody2D"),
    ],
)
def test_types_godot4_lacks_are_removed_types(repo, index, rel, key, type_name):
    j = judged_file(repo, index, rel, "resource" if rel.endswith(".tres") else "scene")[key]
    assert j.signal == "godot3" and "godot3:removed_type" in j.evidence_kinds, j.explanation
    assert j.needs_migration and f"`{type_name}`" in j.explanation


def test_a_renamed_type_names_its_successor_from_the_rename_table(repo, index):
    j = judged_file(repo, index, f"{CORPUS}/projects/g3_plain/level.tscn", "scene")["node:Level/Player"]
    assert [(n.old, n.new) for n in j.migration_notes] == [("KinematicBody2D", "CharacterBody2D")]
    assert j.migration_notes[0].basis_record_id == "rename:class_renames:KinematicBody2D"


def test_types_godot3_lacks_are_removed_types_of_godot4(repo, index):
    j = judged_file(repo, index, f"{CORPUS}/projects/g3_with_g4_scene/ship.tscn", "scene")["node:Ship"]
    assert j.signal == "godot4" and "godot4:removed_type" in j.evidence_kinds


def test_types_of_both_versions_are_no_evidence(index):
    # Node2D and Timer are in both class references: no evidence, whatever the file format around them.
    j = judged_text(
        index,
        '[gd_scene format=2]\n\n[node name="A" type="Node2D"]\n\n[node name="B" type="Timer" parent="."]\nwait_time = 2.0\n',
        "scene",
        "a.tscn",
    )
    assert j["node:A/B"].signal == "neutral" and j["node:A/B"].evidence_kinds == ()


def test_scene_properties_are_judged_by_the_node_type(repo, index):
    judged = judged_file(repo, index, f"{CORPUS}/projects/g4_converted_leftovers/scenes/menu.tscn", "scene")
    play = judged["node:Menu/Play"]  # rect_min_size on a Button: Godot 3's name
    assert play.signal == "godot3" and play.evidence_kinds == ("godot3:api",) and play.needs_migration
    quit_ = judged["node:Menu/Quit"]  # offset_* on a Button: Godot 4's names
    assert quit_.signal == "godot4" and quit_.evidence_kinds == ("godot4:api",)
    # margin_right is Godot 3's on a Label even though some Godot 4 class has a member of that name.
    label = judged_file(repo, index, f"{CORPUS}/direct/godot4_format2/title.tscn", "scene")["node:Title/Label"]
    assert "godot3:api" in label.evidence_kinds and "margin_right" in label.explanation


def test_project_file_version_lines_are_config_evidence(repo, index):
    judged = judged_file(repo, index, f"{CORPUS}/projects/g3_plain/project.godot", "project_config")
    assert judged["config_version:config_version"].evidence_kinds == ("godot3:config",)
    assert any(j.evidence_kinds == ("godot3:api",) for j in judged.values()), "scancode input events are API names"
    judged4 = judged_file(repo, index, f"{CORPUS}/projects/g4_plain/project.godot", "project_config")
    assert judged4["config_version:config_version"].evidence_kinds == ("godot4:config",)
    assert judged4["features:config/features"].evidence_kinds == ("godot4:config",)


def test_import_metadata_is_file_format(repo, index):
    judged = judged_file(repo, index, f"{CORPUS}/projects/g4_converted_leftovers/icon.png.import", "import_meta")
    remap = judged["section:remap"]  # res://.import path and the StreamTexture type
    assert remap.signal == "godot3" and remap.evidence_kinds == ("godot3:file_format",) and not remap.needs_migration
    judged4 = judged_file(repo, index, f"{CORPUS}/projects/g4_converted_leftovers/art/apple.png.import", "import_meta")
    assert judged4["section:remap"].evidence_kinds == ("godot4:file_format",)


def test_uid_sidecars_are_file_format(repo, index):
    judged = judged_file(repo, index, f"{CORPUS}/projects/g4_plain/player.gd.uid", "uid")
    assert [j.evidence_kinds for j in judged.values()] == [("godot4:file_format",)]


def test_script_evidence_kinds(repo, index):
    judged = judged_file(repo, index, f"{CORPUS}/projects/g4_with_g3_script/enemies/ghost.gd", "gdscript")
    assert judged["class_extends:1"].evidence_kinds == ("godot3:removed_type",)  # extends KinematicBody2D
    assert "godot3:syntax" in judged["variable:speed"].evidence_kinds  # export var
    assert "godot3:syntax" in judged["function:set_health"].evidence_kinds  # yield(
    player = judged_file(repo, index, f"{CORPUS}/projects/g4_with_g3_script/player.gd", "gdscript")
    assert "godot4:syntax" in player["variable:speed"].evidence_kinds  # @export
    assert player["class_extends:1"].evidence_kinds == ("godot4:removed_type",)  # extends CharacterBody2D


def test_name_like_calls_are_api_not_syntax(index):
    # instance() / emit() are names a project may define itself: never grammar.
    judged = judged_text(
        index, "extends Node\n\nfunc a(scene):\n\tadd_child(scene.instance())\n\nfunc b():\n\tdone.emit()\n", "gdscript", "a.gd"
    )
    assert judged["function:a"].evidence_kinds == ("godot3:api",)
    assert judged["function:b"].evidence_kinds == ("godot4:api",)


def test_contradictory_facts_of_one_rank_leave_a_weak_judgment(repo, index):
    # Registry.instance() (the project's accessor) and Events.level_finished.emit() on one line.
    judged = judged_file(repo, index, f"{CORPUS}/projects/g4_mixed_evidence/main.gd", "gdscript")
    j = judged["function:finish"]
    assert {"godot3:api", "godot4:api"} <= set(j.evidence_kinds)
    assert j.confidence <= 0.25


def test_grammar_outranks_a_name_in_one_chunk(index):
    # `await` is grammar only Godot 4 parses; `.instance()` on an untyped parameter is only a name:
    # the chunk is Godot 4, and the name costs it a quarter of its strength, not half.
    j = judged_text(index, "extends Node\n\nfunc f(s):\n\tvar r = s.instance()\n\tawait r.ready\n", "gdscript", "a.gd")[
        "function:f"
    ]
    assert j.signal == "godot4" and set(j.evidence_kinds) == {"godot3:api", "godot4:syntax"}
    assert j.confidence > 0.7
