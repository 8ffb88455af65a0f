from __future__ import annotations

from godot_rag.domain.aggregation.verdict import ChunkOutcome, compute_verdict


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
    enemy = [ChunkOutcome("enemy.gd", "gdscript", "class_extends", "done", "godot3", 0.9),
             ChunkOutcome("enemy.gd", "gdscript", "function", "done", "godot3", 0.9)]
    v = compute_verdict(g4 + enemy)
    assert v.label == "mixed"
    assert any("enemy.gd" in b for b in v.basis)


def test_one_stray_godot3_fact_does_not_make_a_godot4_project_mixed():
    g4 = [ChunkOutcome("project.godot", "project_config", "config_version", "done", "godot4", 0.99)]
    g4 += [ChunkOutcome("player.gd", "gdscript", "function", "done", "godot4", 0.95)] * 3
    stray = [ChunkOutcome("hud.gd", "gdscript", "function", "done", "godot3", 0.9)]
    assert compute_verdict(g4 + stray).label == "godot4"
