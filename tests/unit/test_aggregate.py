from __future__ import annotations

import importlib.util
import sys

import pytest

from godot_rag.domain.aggregation.verdict import ChunkOutcome, compute_verdict


@pytest.fixture(scope="module")
def ev(repo):
    spec = importlib.util.spec_from_file_location("eval_judge", repo / "benchmarks" / "eval_judge.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["eval_judge"] = module
    spec.loader.exec_module(module)
    return module


def outcome(signal: str, kind: str = "gdscript", chunk_kind: str = "function", conf: float = 0.9, status: str = "done"):
    return ChunkOutcome("x.gd", kind, chunk_kind, status, signal, conf)


def test_no_signal_is_undetermined():
    v = compute_verdict([outcome("neutral"), outcome("neutral")])
    assert v.label == "undetermined" and v.confidence == 0.0
    assert v.counts["neutral"] == 2 and v.counts["total"] == 2


def test_godot3_majority():
    v = compute_verdict([outcome("godot3")] * 5 + [outcome("neutral")] * 10)
    assert v.label == "godot3" and v.confidence > 0.5


def test_godot4_with_config_version():
    v = compute_verdict([outcome("godot4", "project_config", "config_version", 0.99), outcome("neutral")])
    assert v.label == "godot4"


def test_balanced_signals_are_mixed():
    v = compute_verdict([outcome("godot3")] * 4 + [outcome("godot4")] * 4)
    assert v.label == "mixed"


def test_failed_chunks_are_counted_not_weighed():
    v = compute_verdict([outcome("godot4")] * 3 + [outcome("", status="failed")])
    assert v.label == "godot4" and v.counts["failed"] == 1
    assert any("failed" in b for b in v.basis)


def test_a_whole_godot3_script_in_a_godot4_project_is_mixed():
    g4 = [ChunkOutcome("project.godot", "project_config", "config_version", "done", "godot4", 0.99)]
    g4 += [ChunkOutcome("player.gd", "gdscript", "function", "done", "godot4", 0.95)] * 3
    enemy = [
        ChunkOutcome("enemy.gd", "gdscript", "class_extends", "done", "godot3", 0.9),
        ChunkOutcome("enemy.gd", "gdscript", "function", "done", "godot3", 0.9),
    ]
    v = compute_verdict(g4 + enemy)
    assert v.label == "mixed"
    assert any("enemy.gd" in b for b in v.basis)


def test_one_stray_godot3_fact_does_not_make_a_godot4_project_mixed():
    g4 = [ChunkOutcome("project.godot", "project_config", "config_version", "done", "godot4", 0.99)]
    g4 += [ChunkOutcome("player.gd", "gdscript", "function", "done", "godot4", 0.95)] * 3
    stray = [ChunkOutcome("hud.gd", "gdscript", "function", "done", "godot3", 0.9)]
    assert compute_verdict(g4 + stray).label == "godot4"


# ---------------------------------------------------------------- verdict rules (evidence kinds)


def chunk(
    file: str,
    signal: str,
    kinds: tuple[str, ...] = (),
    conf: float = 0.9,
    kind: str = "",
    chunk_kind: str = "function",
    chunk_id: str = "",
):
    source_kind = (
        kind
        or {
            "gd": "gdscript",
            "tscn": "scene",
            "tres": "resource",
            "import": "import_meta",
            "uid": "uid",
            "godot": "project_config",
        }[file.rsplit(".", 1)[-1]]
    )
    return ChunkOutcome(file, source_kind, chunk_kind, "done", signal, conf, kinds, chunk_id)


def config(version: int):
    signal = "godot4" if version == 5 else "godot3"
    return chunk("project.godot", signal, (f"{signal}:config",), 0.99, chunk_kind="config_version")


def godot4_scripts(n: int = 3):
    return [chunk(f"s{i}.gd", "godot4", ("godot4:syntax",), 0.95) for i in range(n)]


def format2_scene(name: str):
    return [
        chunk(name, "godot3", ("godot3:file_format",), 0.6, chunk_kind="header"),
        chunk(name, "godot3", ("godot3:file_format",), 0.7, chunk_kind="ext_resource"),
        chunk(name, "godot3", ("godot3:file_format",), 0.7, chunk_kind="node"),
    ]


def test_format2_scenes_leave_a_godot4_project_godot4_and_are_listed():
    scenes = [c for i in range(6) for c in format2_scene(f"level{i}.tscn")]
    v = compute_verdict([config(5), *godot4_scripts(), *scenes])
    assert v.label == "godot4" and v.confidence >= 0.9
    line = next(b for b in v.basis if "file format" in b)
    assert line.startswith("leftover: 6 scene/resource files still in the Godot 3 file format; Godot 4 loads them; re-save")
    assert "level0.tscn" in line
    assert not any(b.startswith("mixed") for b in v.basis)


def test_format2_scenes_alone_say_godot3_only_weakly():
    v = compute_verdict(format2_scene("a.tscn"))
    assert v.label == "godot3" and v.confidence <= 0.5
    assert "only the file format" in v.basis[0]


def test_project_godot_decides_the_projects_own_version():
    # No config: the Godot 3 API evidence outweighs. With config_version=5 the project is Godot 4
    # and the Godot 3 API is a leftover, which lowers the confidence.
    api3 = [chunk("a.gd", "godot3", ("godot3:api",), 0.85), chunk("b.gd", "godot3", ("godot3:api",), 0.85)]
    api4 = [chunk("c.gd", "godot4", ("godot4:api",), 0.8)]
    assert compute_verdict(api3 + api4).label == "godot3"
    v = compute_verdict([config(5), *api3, *api4])
    assert v.label == "godot4" and 0.55 <= v.confidence < 0.9
    assert any(b.startswith("leftover: Godot 3 API in 2 scripts") for b in v.basis)
    assert v.basis[0].startswith("project.godot says Godot 4")


def test_a_script_in_the_other_versions_syntax_makes_the_project_mixed():
    ghost = [
        chunk("ghost.gd", "godot3", ("godot3:syntax",), 0.95),
        chunk("ghost.gd", "godot3", ("godot3:syntax", "godot3:api"), 0.9),
    ]
    v = compute_verdict([config(5), *godot4_scripts(), *ghost])
    assert v.label == "mixed" and v.confidence >= 0.85
    assert any(
        b.startswith("mixed: written for Godot 3, which Godot 4 cannot load or run: ghost.gd (Godot 3 syntax)") for b in v.basis
    )


def test_a_script_extending_a_class_the_project_version_lacks_makes_it_mixed():
    enemy = [
        chunk("enemy.gd", "godot3", ("godot3:removed_type",), 0.85, chunk_kind="class_extends"),
        chunk("enemy.gd", "godot3", ("godot3:api",), 0.85),
    ]
    v = compute_verdict([config(5), *godot4_scripts(), *enemy])
    assert v.label == "mixed"
    assert any("enemy.gd (Godot 3-only base class)" in b for b in v.basis)


def test_stray_other_version_syntax_in_a_script_of_the_projects_version_is_a_leftover():
    # One Godot 3 construct in a script whose Godot 4 evidence outweighs it: the script is Godot 4's, not Godot 3's.
    player = [chunk("player.gd", "godot4", ("godot4:syntax",), 0.95)] * 3 + [chunk("player.gd", "godot3", ("godot3:syntax",), 0.95)]
    v = compute_verdict([config(5), *player])
    assert v.label == "godot4"
    assert any(b.startswith("leftover: Godot 3 syntax left in 1 script") and "player.gd" in b for b in v.basis)


def test_api_evidence_alone_never_makes_a_file_written_for_the_other_version():
    # Twelve functions of one plugin file judged Godot 4 on names alone: listed, never a flip.
    plugin = [chunk("plugin.gd", "godot4", ("godot4:api",), 0.9) for _ in range(12)]
    v = compute_verdict([config(3), chunk("x.gd", "godot3", ("godot3:syntax",), 0.95), *plugin])
    assert v.label == "godot3"
    assert any(b.startswith("leftover: Godot 4 API in 1 script") for b in v.basis)


def test_a_resource_of_a_removed_type_makes_a_godot4_project_mixed():
    font = [chunk("font.tres", "godot3", ("godot3:removed_type", "godot3:file_format"), 0.85, chunk_kind="header")]
    v = compute_verdict([config(5), *godot4_scripts(), *font])
    assert v.label == "mixed" and v.confidence >= 0.85
    assert any("font.tres (type Godot 4 does not have)" in b for b in v.basis)


def test_godot3_type_names_in_a_godot4_format_scene_are_a_prerelease_leftover_not_a_mix():
    # A Godot 4.0 alpha saved this scene (format=3) with a node type renamed before 4.0's release (Position2D).
    main = [
        chunk("main.tscn", "godot4", ("godot4:file_format",), 0.95, kind="scene", chunk_kind="header"),
        chunk("main.tscn", "godot3", ("godot3:removed_type",), 0.9, kind="scene", chunk_kind="node"),
    ]
    shader = [chunk("color.gdshader", "godot3", ("godot3:syntax", "godot4:file_format"), 0.85, kind="shader", chunk_kind="block")]
    v = compute_verdict([config(5), *godot4_scripts(), *main, *shader])
    assert v.label == "godot4"
    line = next(
        b for b in v.basis if b.startswith("leftover: Godot 3 type or shader names in 2 files saved in Godot 4's own format")
    )
    assert "main.tscn" in line and "color.gdshader" in line
    assert not any(b.startswith("mixed") for b in v.basis)
    # The same node in a Godot 3 format scene, or a Godot 3 shader named .shader: files written for Godot 3.
    old = [
        chunk("old.tscn", "godot3", ("godot3:file_format",), 0.6, kind="scene", chunk_kind="header"),
        chunk("old.tscn", "godot3", ("godot3:removed_type",), 0.9, kind="scene", chunk_kind="node"),
    ]
    assert compute_verdict([config(5), *godot4_scripts(), *old]).label == "mixed"
    named3 = [chunk("water.shader", "godot3", ("godot3:syntax", "godot3:file_format"), 0.9, kind="shader", chunk_kind="block")]
    assert compute_verdict([config(5), *godot4_scripts(), *main, *named3]).label == "mixed"
    # Without a pre-release scene, a .gdshader in Godot 3's shading language is a Godot 3 shader renamed.
    assert compute_verdict([config(5), *godot4_scripts(), *shader]).label == "mixed"
    # A built-in script in Godot 3's grammar was not written by a Godot 4 editor, whatever the scene's format.
    built_in = [
        chunk("ui.tscn", "godot4", ("godot4:file_format",), 0.95, kind="scene", chunk_kind="header"),
        chunk("ui.tscn", "godot3", ("godot3:removed_type", "godot3:syntax"), 0.9, kind="scene", chunk_kind="sub_resource"),
    ]
    assert compute_verdict([config(5), *godot4_scripts(), *built_in]).label == "mixed"
    # In a Godot 3 project nothing changes: a Godot 4 format file stays one Godot 3 cannot load.
    assert (
        compute_verdict([config(4), *[chunk(f"s{i}.gd", "godot3", ("godot3:syntax",), 0.95) for i in range(3)], *main]).label
        == "mixed"
    )


def test_a_weak_removed_type_judgment_does_not_count():
    font = [chunk("font.tres", "godot3", ("godot3:removed_type", "godot4:syntax"), 0.3, chunk_kind="header")]
    assert compute_verdict([config(5), *godot4_scripts(), *font]).label == "godot4"


def test_godot4_file_format_in_a_godot3_project_is_a_file_godot3_cannot_load():
    scripts3 = [chunk(f"s{i}.gd", "godot3", ("godot3:syntax",), 0.95) for i in range(3)]
    ship = [chunk("ship.tscn", "godot4", ("godot4:file_format",), 0.95, chunk_kind="header")]
    v = compute_verdict([config(4), *scripts3, *ship])
    assert v.label == "mixed"
    assert any("ship.tscn (Godot 4 file format)" in b for b in v.basis)


def test_import_metadata_and_uid_files_never_make_a_project_mixed():
    imports = [chunk(f"a{i}.png.import", "godot3", ("godot3:file_format",), 0.98, chunk_kind="section") for i in range(5)]
    v = compute_verdict([config(5), *godot4_scripts(), *imports])
    assert v.label == "godot4"
    assert any(b.startswith("leftover: 5 .import files from Godot 3") for b in v.basis)
    uids = [chunk(f"s{i}.gd.uid", "godot4", ("godot4:file_format",), 0.9, chunk_kind="block") for i in range(5)]
    scripts3 = [chunk(f"s{i}.gd", "godot3", ("godot3:syntax",), 0.95) for i in range(3)]
    assert compute_verdict([config(4), *scripts3, *uids]).label == "godot3"


def test_judgments_without_kinds_fall_back_to_weight():
    # A model's judgments name no kinds: a file whose other-version weight reaches about two confident
    # chunks and is at least the project version's weight in it is written for the other version.
    two = [ChunkOutcome("enemy.gd", "gdscript", "function", "done", "godot3", 0.9)] * 2
    one = [ChunkOutcome("hud.gd", "gdscript", "function", "done", "godot3", 0.9)]
    base = [config(5), *godot4_scripts()]
    assert compute_verdict(base + two).label == "mixed"
    assert compute_verdict(base + one).label == "godot4"
    # A model's Godot 3 calls on format=2 scenes say which editor saved them: never a flip.
    scenes = [ChunkOutcome(f"l{i}.tscn", "scene", "node", "done", "godot3", 0.9) for i in range(4) for _ in range(4)]
    v = compute_verdict(base + scenes)
    assert v.label == "godot4"
    assert any(b.startswith("leftover: 4 scene/resource files judged Godot 3") and "l0.tscn" in b for b in v.basis), v.basis


def test_every_chunk_is_accounted_for_once():
    outcomes = [
        config(5),
        *godot4_scripts(2),
        chunk("a.gd", "neutral", (), 0.6),
        ChunkOutcome("b.gd", "gdscript", "function", "failed", "", 0.0, (), "b.gd:function:f"),
    ]
    v = compute_verdict(outcomes)
    assert v.counts == {"godot3": 0, "godot4": 3, "neutral": 1, "failed": 1, "total": 5}
    with pytest.raises(ValueError, match="twice"):
        compute_verdict([chunk("a.gd", "godot4", chunk_id="a.gd:function:f"), chunk("a.gd", "neutral", chunk_id="a.gd:function:f")])


def test_project_set_verdicts_and_calibration(ev):
    # The labelled project set of `make eval`: every project right, and confident verdicts right >= 9 in 10.
    report = ev.evaluate_projects(ev.load_knowledge())
    wrong = [(r["project"], r["label"], r["verdict"], r["basis"]) for r in report["projects"] if r["label"] != r["verdict"]]
    assert len(report["projects"]) >= 20
    assert report["accuracy"] >= 0.95, wrong
    confident = [r for r in report["projects"] if r["confidence"] >= ev.CALIBRATED_AT]
    assert confident and sum(r["label"] == r["verdict"] for r in confident) >= ev.TARGET_CALIBRATED * len(confident)
    assert {r["label"] for r in report["projects"]} == {"godot3", "godot4", "mixed"}
    # Every judgment keeps the contract (the judge service would fail the chunk otherwise).
    assert [e for r in report["projects"] for e in r["contract_errors"]] == []
    # No chunk of a plain godot3 or godot4 project is judged for the other version.
    assert [(r["project"], r["against"]) for r in report["projects"] if r["against"] and r["label"] != "mixed"] == []


def test_own_project_set_from_a_tsv_without_project_godot(ev, tmp_path):
    # `make eval PROJECTS=...`: paths relative to the TSV; with project.godot left out the verdict rests on the
    # scripts and scenes, and a chunk judged for the other version is listed with its explanation.
    (tmp_path / "p3").mkdir()
    (tmp_path / "p3" / "player.gd").write_text("extends KinematicBody2D\n\nfunc _ready():\n\tyield(get_tree(), 'idle_frame')\n")
    (tmp_path / "p3" / "project.godot").write_text("config_version=5\n")  # says Godot 4: left out, so unheard
    (tmp_path / "set.tsv").write_text("# path\tlabel\twhy\np3\tgodot4\tlabelled wrong on purpose\n")
    cases = ev.load_projects(tmp_path / "set.tsv")
    assert [(c.path, c.label) for c in cases] == [(str(tmp_path / "p3"), "godot4")]
    report = ev.evaluate_projects(ev.load_knowledge(), cases, without_project_godot=True)
    (row,) = report["projects"]
    assert row["verdict"] == "godot3" and report["accuracy"] == 0.0
    assert row["script_chunks"] == 2 and len(row["against"]) == 2  # the extends line and the function
    assert any("KinematicBody2D" in a for a in row["against"]) and any("yield" in a for a in row["against"])
    assert report["functions"]["total"] == 0  # an own set has no labelled functions
    (tmp_path / "bad.tsv").write_text("missing\tgodot3\t\n")
    with pytest.raises(ValueError, match="no project at missing"):
        ev.load_projects(tmp_path / "bad.tsv")


def test_a_shader_the_projects_version_cannot_compile_makes_it_mixed():
    # Godot 3 shading language in a Godot 4 project: its compiler refuses the shader (written for Godot 3).
    g3_shader = [chunk("water.gdshader", "godot3", ("godot3:syntax",), 0.95, kind="shader", chunk_kind="block")]
    v = compute_verdict([config(5), *godot4_scripts(2), *g3_shader])
    assert v.label == "mixed" and v.confidence == 0.85
    assert any("water.gdshader" in line and "Godot 3 shader syntax" in line for line in v.basis)
    # A .shader file name alone (file format) is a leftover, listed; the verdict stays Godot 4.
    named = [chunk("old.shader", "godot3", ("godot3:file_format",), 0.6, kind="shader", chunk_kind="block")]
    v = compute_verdict([config(5), *godot4_scripts(2), *named])
    assert v.label == "godot4"
    assert any(line.startswith("leftover: Godot 3 shader language or file names in 1 shader") for line in v.basis)


def test_a_gdnative_library_left_in_a_godot4_project_is_a_named_leftover():
    gdnlib = [chunk("bin/noise.gdnlib", "godot3", ("godot3:removed_type",), 0.9, kind="config", chunk_kind="section")]
    v = compute_verdict([config(5), *godot4_scripts(2), *gdnlib])
    assert v.label == "godot4"  # a library description alone loads nothing: listed, not a flip
    assert (
        "leftover: 1 native library built for Godot 3 (GDNative: rebuild the native code as a GDExtension): bin/noise.gdnlib"
        in v.basis
    )


def test_a_godot2_project_is_named_and_labelled_godot3_at_most_half_sure():
    """engine.cfg and format=1 scenes (Godot 1/2): neither Godot 3 nor 4 opens the project; it converts to 3 first."""
    godot2 = [
        chunk("engine.cfg", "godot3", ("godot3:godot2",), 0.9, kind="config", chunk_kind="section"),
        chunk("stage.tscn", "godot3", ("godot3:godot2",), 0.7, chunk_kind="header"),
        *(chunk(f"s{i}.gd", "godot3", ("godot3:api",), 0.9) for i in range(4)),
    ]
    v = compute_verdict(godot2)
    assert v.label == "godot3" and v.confidence == 0.5
    assert v.basis[0] == "no project.godot: a Godot 2 project, labelled Godot 3, the version it converts to first"
    assert v.basis[1].startswith("Godot 2 project files: engine.cfg, stage.tscn: neither Godot 3 nor Godot 4 opens")
    # The same scripts without the Godot 2 files: a plain Godot 3 project, surer and with no such line.
    plain = compute_verdict(godot2[2:])
    assert plain.label == "godot3" and plain.confidence > 0.5
    assert not any("Godot 2" in line for line in plain.basis)
    # A Godot 3 project (project.godot says so) with a Godot 2 scene left in it: named, the label and its
    # confidence rest on project.godot.
    kept = compute_verdict([config(4), *godot2[1:]])
    assert kept.label == "godot3" and kept.confidence > 0.5
    assert kept.basis[0].startswith("project.godot says Godot 3")
    assert "Godot 2 API or file formats, which neither Godot 3 nor Godot 4 has, in: stage.tscn" in kept.basis


def test_a_godot3_csharp_project_file_left_in_a_godot4_project_is_a_named_leftover():
    csproj = [chunk("Game.csproj", "godot3", ("godot3:removed_type",), 0.95, kind="text", chunk_kind="block")]
    v = compute_verdict([config(5), *godot4_scripts(2), *csproj])
    assert v.label == "godot4"
    assert (
        "leftover: 1 C# project file on Godot 3's Godot SDK "
        "(set Godot.NET.Sdk to the project's 4.x version and rebuild the C# scripts): Game.csproj" in v.basis
    )
    # Without project.godot, the SDK is the C# project's own statement of its version.
    alone = compute_verdict([chunk("Game.csproj", "godot4", ("godot4:removed_type",), 0.95, kind="text", chunk_kind="block")])
    assert alone.label == "godot4"


def test_a_godot3_version_line_beside_godot4_values_in_project_godot_is_set_aside():
    # config_version=4 and `enabled=PackedStringArray(...)` in one project.godot: a Godot 4 development build wrote
    # it. The version line counts as file format and the Godot 4 scripts decide.
    packed = chunk("project.godot", "godot4", ("godot4:file_format",), 0.9, chunk_kind="section")
    v = compute_verdict([config(4), packed, *godot4_scripts(2)])
    assert v.label == "godot4", v.basis
    assert v.basis[0].startswith("project.godot's version line set aside") and "Godot 4 pre-release" in v.basis[1]
    # Without the Godot 4 values, the version line decides: the Godot 4 scripts make it mixed.
    assert compute_verdict([config(4), *godot4_scripts(2)]).label == "mixed"
