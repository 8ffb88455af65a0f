"""The whole pipeline on the samples, through real NATS and real PostgreSQL."""

from __future__ import annotations

import time

import pytest

from godot_rag.cli import DEFAULT_PROMPT
from godot_rag.domain.chunking.files import chunk_file
from godot_rag.domain.ingest.policy import files_from_expanded_text, scan_folder
from godot_rag.pipeline.export import result_to_json
from godot_rag.v1 import services_pb2 as spb


def run_analysis(stack, path: str, prompt: str = DEFAULT_PROMPT, timeout_s: float = 300) -> dict:
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=prompt, path=path), timeout=120)
    last = None
    for progress in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=timeout_s):
        last = progress
    assert last is not None and last.status == "done", f"analysis did not finish: {last}"
    return result_to_json(stack.gateway.Get(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=60))


def expected_chunk_ids(files) -> dict[str, list[str]]:
    """Chunk ids per included file, computed here without the pipeline."""
    out: dict[str, list[str]] = {}
    for f in files:
        if not f.included:
            continue
        result = chunk_file(f.source_file, f.source_kind, f.data)
        out[f.source_file] = [c.chunk_id for c in result.chunks]
    return out


def assert_every_chunk_judged_once(stack, doc: dict, files) -> None:
    expected = expected_chunk_ids(files)
    got: dict[str, list[str]] = {}
    for c in doc["chunks"]:
        got.setdefault(c["source_file"], []).append(c["chunk_id"])
    assert got == {k: v for k, v in expected.items() if v}
    rows = stack.sql(
        "select c.chunk_id, count(j.chunk_id) as n from godot_rag.chunks c left join godot_rag.judgments j "
        "on j.analysis_id = c.analysis_id and j.chunk_id = c.chunk_id where c.analysis_id = %s group by c.chunk_id",
        (doc["analysis_id"],),
    )
    assert rows, "no chunk stored"
    assert all(r["n"] == 1 for r in rows), [r for r in rows if r["n"] != 1]
    assert len(rows) == sum(len(v) for v in expected.values())
    for c in doc["chunks"]:
        assert c["status"] == "done", c
        assert c["signal"] in ("godot3", "godot4", "neutral"), c
        assert c["judge"]["kind"] == "rules"
        assert c["retriever_query"]["query_text"] or c["chunk_kind"] != "function"


def test_godot3_sample_is_godot3(stack, repo):
    path = repo / "samples" / "godot3_project"
    doc = run_analysis(stack, str(path))
    assert doc["verdict"]["label"] == "godot3", doc["verdict"]
    files = scan_folder(path, max_bytes=2 * 1024 * 1024)
    assert_every_chunk_judged_once(stack, doc, files)
    excluded = {f["source_file"]: f["excluded_reason"] for f in doc["files"] if f["status"] == "excluded"}
    assert "README.md" in excluded and "documentation" in excluded["README.md"]
    assert "icon.png" in excluded and "binary" in excluded["icon.png"]
    # A Godot 3 chunk carries migration notes traceable to api_mapping records.
    notes = [n for c in doc["chunks"] for n in c["migration_notes"]]
    assert any(n["old"] == "KinematicBody2D" and n["basis_record_id"].startswith("rename:class_renames:") for n in notes), notes
    # The project index was stored at submission with each script's slice of it, and judgments
    # say what their member evidence rests on: hud.gd's onready vars are typed by hud.tscn.
    assert [
        r["version"]
        for r in stack.sql("select version from godot_rag.project_symbols where analysis_id = %s", (doc["analysis_id"],))
    ] == ["symbols/3"]
    scopes = {
        r["source_file"]: r["symbol_scope"]
        for r in stack.sql("select source_file, symbol_scope from godot_rag.files where analysis_id = %s", (doc["analysis_id"],))
    }
    assert '"Globals"' in scopes["player.gd"] and scopes["README.md"] == "" and scopes["main.tscn"] == ""
    hud = next(c for c in doc["chunks"] if c["chunk_id"] == "hud.gd:function:_ready")
    assert "[receiver `health_bar`: ProgressBar]" in hud["explanation"], hud["explanation"]


def test_godot4_sample_is_godot4(stack, repo):
    path = repo / "samples" / "godot4_project"
    doc = run_analysis(stack, str(path))
    assert doc["verdict"]["label"] == "godot4", doc["verdict"]
    assert_every_chunk_judged_once(stack, doc, scan_folder(path, max_bytes=2 * 1024 * 1024))
    assert doc["verdict"]["counts"]["godot3"] == 0, [c for c in doc["chunks"] if c["signal"] == "godot3"]


def test_mini_dodge_expanded_text_keeps_seed_line_ranges(stack, repo):
    path = repo / "samples" / "mini_dodge.txt"
    doc = run_analysis(stack, str(path))
    files = files_from_expanded_text(path.read_text(), max_bytes=2 * 1024 * 1024)
    assert_every_chunk_judged_once(stack, doc, files)
    spans = [(c["start_line"], c["end_line"]) for c in doc["chunks"] if c["source_file"] == "player.gd"]
    assert spans == [(1, 1), (3, 3), (5, 6), (8, 10), (12, 26), (28, 31)]
    enemy = {c["chunk_id"]: c for c in doc["chunks"] if c["source_file"] == "enemy.gd"}
    assert enemy["enemy.gd:class_extends:1"]["signal"] == "godot3"
    process = next(c for c in doc["chunks"] if c["chunk_id"] == "player.gd:function:_process")
    assert process["retriever_query"]["query_text"].startswith("Input.is_action_pressed Vector2.ZERO")
    # Godot 4 player + Godot 3 enemy in one project. The basis names why from the judgments'
    # evidence kinds, which travel from the judge through the store to the aggregator.
    assert doc["verdict"]["label"] == "mixed", doc["verdict"]
    assert any("enemy.gd (Godot 3-only base class)" in b for b in doc["verdict"]["basis"]), doc["verdict"]


def test_resubmission_returns_the_same_finished_analysis(stack, repo):
    path = str(repo / "samples" / "godot4_project")
    first = run_analysis(stack, path)
    started = time.monotonic()
    second = run_analysis(stack, path)
    assert second["analysis_id"] == first["analysis_id"]
    assert second["verdict"] == first["verdict"]
    assert time.monotonic() - started < 30


def test_bad_input_is_reported_and_the_rest_is_analysed(stack, tmp_path):
    project = tmp_path / "broken"
    project.mkdir()
    (project / "project.godot").write_text('config_version=4\n\n[application]\nconfig/name="Broken"\n')
    (project / "ok.gd").write_text('extends KinematicBody2D\n\nfunc _ready():\n\tyield(get_tree(), "idle_frame")\n')
    (project / "bad.gd").write_bytes(b"extends Node\n\xff\xfe broken bytes\n")
    (project / "nul.tscn").write_bytes(b"[gd_scene format=2]\n\0\0\0")
    doc = run_analysis(stack, str(project))
    by_file = {f["source_file"]: f for f in doc["files"]}
    # Not UTF-8 (no NUL bytes): excluded with where the first such byte is; NUL bytes: binary content.
    assert by_file["bad.gd"]["status"] == "excluded"
    assert by_file["bad.gd"]["excluded_reason"].startswith("not UTF-8: byte 0xFF at line 2, column 1 ")
    assert by_file["nul.tscn"]["status"] == "excluded" and "binary" in by_file["nul.tscn"]["excluded_reason"]
    assert by_file["ok.gd"]["status"] == "chunked"
    assert doc["verdict"]["label"] == "godot3"


def test_unknown_analysis_is_not_found(stack):
    import grpc

    with pytest.raises(grpc.RpcError) as err:
        stack.gateway.Get(spb.GetRequest(analysis_id="a-does-not-exist"), timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_one_trace_ties_every_hop_of_every_chunk(stack, repo):
    doc = run_analysis(stack, str(repo / "samples" / "godot3_project"))
    rows = stack.sql("select stage, trace_id from godot_rag.chunk_stages where analysis_id = %s", (doc["analysis_id"],))
    traced = {r["trace_id"] for r in rows if r["stage"] in ("retrieve", "judge", "aggregate")}
    assert len(traced) == 1 and "" not in traced, traced


def test_json_document_has_the_stable_shape(stack, repo):
    doc = run_analysis(stack, str(repo / "samples" / "godot3_project"))
    for key in ("analysis_id", "project_id", "prompt", "verdict", "files", "chunks"):
        assert key in doc
    assert set(doc["verdict"]) >= {"label", "confidence", "counts"}
    for f in doc["files"]:
        assert set(f) >= {"source_file", "source_kind", "status", "excluded_reason"}
    chunk_keys = {
        "source_file",
        "chunk_id",
        "chunk_order",
        "chunk_kind",
        "start_line",
        "end_line",
        "status",
        "signal",
        "needs_migration",
        "confidence",
        "judge",
        "evidence",
        "migration_notes",
        "retriever_query",
        "hits",
    }
    for c in doc["chunks"]:
        assert set(c) >= chunk_keys, chunk_keys - set(c)
        for e in c["evidence"]:
            assert set(e) >= {"table", "record_id", "score"}
        for n in c["migration_notes"]:
            assert set(n) >= {"line", "old", "new", "basis_record_id"}
            assert c["start_line"] <= n["line"] <= c["end_line"]
        assert set(c["retriever_query"]) >= {"query_text", "query_terms", "prompt_terms"}
    assert any(e["score"] > 0 for c in doc["chunks"] for e in c["evidence"])


def test_a_second_analysis_reuses_parsed_files(stack, tmp_path):
    # A fresh copy, so no earlier test has parsed these exact files yet.
    project = tmp_path / "reuse"
    project.mkdir()
    (project / "project.godot").write_text('config_version=5\n\n[application]\nconfig/name="Reuse"\n')
    (project / "a.gd").write_text(
        "extends Node2D\n\n@export var speed := 3.0\n\nfunc _ready() -> void:\n\tawait get_tree().process_frame\n"
    )
    first = run_analysis(stack, str(project), prompt="Is this Godot 4? (reuse check, first)")
    second = run_analysis(stack, str(project), prompt="Is this Godot 4? (reuse check, second)")
    assert first["analysis_id"] != second["analysis_id"]
    rows = stack.sql(
        "select analysis_id, source_file, chunks_reused from godot_rag.files where included and analysis_id in (%s, %s)",
        (first["analysis_id"], second["analysis_id"]),
    )
    reused = {(r["analysis_id"], r["source_file"]): r["chunks_reused"] for r in rows}
    assert reused[(first["analysis_id"], "a.gd")] is False
    assert reused[(second["analysis_id"], "a.gd")] is True
    assert reused[(second["analysis_id"], "project.godot")] is True
    assert [c["chunk_id"] for c in first["chunks"]] == [c["chunk_id"] for c in second["chunks"]]


def test_the_cli_sends_a_folder_as_content_and_gets_the_same_analysis(stack, repo):
    """What `godot-rag analyze DIR` does: the folder travels as an archive, not as a path of this machine."""
    from godot_rag.cli import analyze_one, submit_request
    from godot_rag.settings import load_settings

    path = repo / "samples" / "godot3_project"
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(stack.supervisor.settings.data_dir)})
    request = submit_request(str(path), DEFAULT_PROMPT, settings=settings)
    assert request.WhichOneof("input") == "archive"
    (doc,) = analyze_one(stack.gateway, str(path), DEFAULT_PROMPT, settings=settings)
    assert doc["project_id"] == "local:godot3_project" and doc["verdict"]["label"] == "godot3"
    by_path = run_analysis(stack, str(path))
    # The same files, chunks and verdict as the gateway reading the folder itself.
    assert [(f["source_file"], f["status"]) for f in doc["files"]] == [(f["source_file"], f["status"]) for f in by_path["files"]]
    assert [c["chunk_id"] for c in doc["chunks"]] == [c["chunk_id"] for c in by_path["chunks"]]
    assert doc["verdict"] == by_path["verdict"]
