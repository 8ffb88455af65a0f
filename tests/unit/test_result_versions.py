"""Result versions, the diff of two results and the export's dataset records: the pure parts."""

from __future__ import annotations

from godot_rag.domain.aggregation.diff import DiffChunk, DiffHit, DiffNote, DiffSide, chunk_from_row, diff_sides
from godot_rag.domain.aggregation.versions import (
    judgment_version_id,
    replay_id_of,
    resolve_version,
    retrieval_version_id,
    version_chain,
)
from godot_rag.pipeline.export import dataset_records, project_slug
from godot_rag.prompts import JUDGE_PROMPT_VERSION
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb


def test_version_ids_follow_the_configuration_only():
    a = judgment_version_id(judge_kind="rules", model="rules-3", prompt_version="", retrieval_version="r-1")
    assert a == judgment_version_id(judge_kind="rules", model="rules-3", prompt_version="", retrieval_version="r-1")
    assert a.startswith("j-")
    others = {
        judgment_version_id(judge_kind="llm", model="rules-3", prompt_version="", retrieval_version="r-1"),
        judgment_version_id(judge_kind="rules", model="rules-4", prompt_version="", retrieval_version="r-1"),
        judgment_version_id(judge_kind="rules", model="rules-3", prompt_version="judge.v2", retrieval_version="r-1"),
        judgment_version_id(judge_kind="rules", model="rules-3", prompt_version="", retrieval_version="r-2"),
    }
    assert a not in others and len(others) == 4
    r = retrieval_version_id(kb_version="kb1/minilm", retrieval_version="3", limit_per_table=5)
    assert r.startswith("r-") and r != retrieval_version_id(kb_version="kb1/minilm", retrieval_version="3", limit_per_table=2)
    assert replay_id_of("a1", "judge", {"judge": "rules"}) == replay_id_of("a1", "judge", {"judge": "rules"})
    assert replay_id_of("a1", "judge", {"judge": "rules"}) != replay_id_of("a2", "judge", {"judge": "rules"})


def test_a_version_reads_through_its_bases_nearest_first():
    bases = {"v3": "v2", "v2": "v1", "v1": ""}
    assert version_chain("v3", bases) == ["v3", "v2", "v1"]
    assert version_chain("x", {"x": "y", "y": "x"}) == ["x", "y"]  # a cycle stops
    rows = {"c1": {"v1": {"s": 1}, "v3": {"s": 3}}, "c2": {"v1": {"s": 1}, "v2": {"s": 2}}, "c3": {"v9": {"s": 9}}}
    assert resolve_version("v3", bases, rows) == {"c1": {"s": 3}, "c2": {"s": 2}}
    assert resolve_version("v1", bases, rows) == {"c1": {"s": 1}, "c2": {"s": 1}}


def _chunk(cid, signal, hits=(), notes=(), migration=False):
    return DiffChunk(
        cid,
        "player.gd",
        1,
        5,
        signal,
        migration,
        hits=tuple(DiffHit("api_mapping", h) for h in hits),
        notes=tuple(DiffNote(*n) for n in notes),
    )


def test_diff_reports_labels_candidates_and_notes_per_chunk():
    a = DiffSide(
        "A",
        "godot3",
        0.9,
        chunks=(
            _chunk("same", "godot3", ["r1", "r2"], [(1, "a", "b")]),
            _chunk("label", "godot3", ["r1"], migration=True),
            _chunk("cands", "neutral", ["r1", "r2", "r3"]),
            _chunk("notes", "godot3", [], [(2, "yield", "await"), (3, "x", "y")]),
            _chunk("gone", "neutral"),
        ),
    )
    b = DiffSide(
        "B",
        "godot4",
        0.8,
        chunks=(
            _chunk("same", "godot3", ["r1", "r2"], [(1, "a", "b")]),
            _chunk("label", "godot4", ["r1"]),
            _chunk("cands", "neutral", ["r2", "r1", "r4"]),
            _chunk("notes", "godot3", [], [(2, "yield", "await"), (4, "p", "q")]),
            _chunk("new", "godot4"),
        ),
    )
    doc = diff_sides(a, b)
    by_id = {c["chunk_id"]: c for c in doc["chunks"]}
    assert doc["verdict"] == {"a": "godot3", "b": "godot4", "changed": True, "a_confidence": 0.9, "b_confidence": 0.8}
    assert not by_id["same"]["changed"]
    assert by_id["label"]["label"] == {"a": "godot3", "b": "godot4"}
    assert by_id["label"]["needs_migration"] == {"a": True, "b": False}
    cands = by_id["cands"]["candidates"]
    assert [h["record_id"] for h in cands["added"]] == ["r4"] and [h["record_id"] for h in cands["removed"]] == ["r3"]
    assert [(m["record_id"], m["a_rank"], m["b_rank"]) for m in cands["moved"]] == [("r1", 1, 2), ("r2", 2, 1)]
    assert by_id["cands"]["label"] is None and by_id["cands"]["changed"]
    assert by_id["notes"]["notes"] == {
        "added": [{"line": 4, "old": "p", "new": "q", "basis_record_id": ""}],
        "removed": [{"line": 3, "old": "x", "new": "y", "basis_record_id": ""}],
    }
    assert by_id["gone"]["presence"] == "only_a" and by_id["new"]["presence"] == "only_b"
    s = doc["summary"]
    assert (s["chunks_compared"], s["chunks_changed"], s["label_changes"], s["migration_changes"]) == (4, 5, 1, 1)
    assert (s["candidates_added"], s["candidates_removed"], s["candidates_moved"]) == (1, 1, 2)
    assert (s["notes_added"], s["notes_removed"], s["only_in_a"], s["only_in_b"]) == (1, 1, 1, 1)
    assert s["transitions"] == {"godot3->godot4": 1}


def test_a_failed_judgment_has_no_label_in_the_diff():
    failed = chunk_from_row("c", "f.gd", 1, 2, {"signal": "godot3", "status": "failed"}, [{"table": "t", "record_id": "r"}])
    ok = chunk_from_row("c", "f.gd", 1, 2, {"signal": "godot3", "status": "ok"}, [{"table": "t", "record_id": "r"}])
    entry = diff_sides(DiffSide("A", "", chunks=(failed,)), DiffSide("B", "", chunks=(ok,)))["chunks"][0]
    assert entry["label"] == {"a": "", "b": "godot3"}


def _version(vid, signal, migration, current, retrieval="r-1"):
    return spb.JudgmentVersion(
        version_id=vid,
        retrieval_version=retrieval,
        current=current,
        judgment=pb.Judgment(signal=signal, needs_migration=migration, judge_kind="rules", model="rules-3", status="ok"),
    )


def test_disagreeing_versions_make_a_preference_pair_with_the_current_one_chosen():
    result = spb.AnalysisResult(analysis_id="a1", project_id="demo", prompt="Godot 3 or 4?")
    hit = pb.RetrievalHit(table="api_mapping", record_id="m1", title="t", content="c", score=0.5)
    agree = spb.ChunkTraceDetail(
        trace=pb.ChunkTrace(chunk_id="c1", source_file="p.gd"),
        text="extends Node",
        hits=[hit],
        judgments=[_version("j-2", "neutral", False, True), _version("j-1", "neutral", False, False)],
    )
    disagree = spb.ChunkTraceDetail(
        trace=pb.ChunkTrace(chunk_id="c2", source_file="p.gd"),
        text="yield()",
        hits=[hit],
        retrievals=[
            spb.RetrievalVersion(version_id="r-2", hits=[pb.RetrievalHit(table="docs_chunks", record_id="d9")]),
            spb.RetrievalVersion(version_id="r-1", hits=[hit]),
        ],
        judgments=[_version("j-2", "godot3", True, True, "r-1"), _version("j-1", "neutral", False, False, "r-2")],
    )
    records = dataset_records(result, [agree, disagree])
    assert [(r["record_type"], r["chunk_id"]) for r in records] == [("judgment", "c1"), ("judgment", "c2"), ("preference", "c2")]
    pair = records[-1]
    assert pair["chosen"]["version_id"] == "j-2" and pair["chosen"]["judgment"]["signal"] == "godot3"
    assert pair["rejected"]["version_id"] == "j-1" and pair["rejected"]["judgment"]["signal"] == "neutral"
    assert [e["record_id"] for e in pair["evidence"]] == ["m1"]
    assert [e["record_id"] for e in pair["rejected"]["evidence"]] == ["d9"]
    assert pair["prompt"] == "Godot 3 or 4?" and pair["chunk_text"] == "yield()"


def test_project_slug_is_a_folder_name():
    assert project_slug("godot3_project") == "godot3_project"
    assert project_slug("pasted://snippet-ab12.gd") == "pasted-snippet-ab12.gd"
    assert project_slug("https://github.com/o/r.git/sub") == "https-github.com-o-r.git-sub"
    assert project_slug("///") == "project"


def test_replay_configuration_fills_the_stack_defaults_and_refuses_what_cannot_run(tmp_path):
    import pytest

    from godot_rag.errors import InvalidInputError
    from godot_rag.pipeline.replay import ReplayOptions, replay_config
    from godot_rag.settings import load_settings

    rules_stack = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path)})
    config = replay_config(rules_stack, ReplayOptions("a1", stage="retrieve", limit_per_table=2))
    assert config == {"judge": "rules", "prompt_version": "", "cascade": "", "cascade_threshold": 0.0, "limit_per_table": 2}
    assert replay_config(rules_stack, ReplayOptions("a1", stage="retrieve"))["limit_per_table"] == 5
    assert replay_config(rules_stack, ReplayOptions("a1"))["limit_per_table"] == 0  # a judge replay searches nothing
    with pytest.raises(InvalidInputError, match="LLM_URL"):
        replay_config(rules_stack, ReplayOptions("a1", judge="llm"))
    with pytest.raises(InvalidInputError, match="no prompt version"):
        replay_config(rules_stack, ReplayOptions("a1", prompt_version="judge.v1"))
    with pytest.raises(InvalidInputError, match="stage"):
        replay_config(rules_stack, ReplayOptions("a1", stage="aggregate"))
    with pytest.raises(InvalidInputError, match="retrieve replay"):
        replay_config(rules_stack, ReplayOptions("a1", stage="judge", limit_per_table=2))
    llm_stack = load_settings(
        {
            "GODOT_RAG_DATA_DIR": str(tmp_path),
            "GODOT_RAG_LLM_URL": "http://127.0.0.1:9",
            "GODOT_RAG_LLM_MODEL": "qwen",
            "GODOT_RAG_JUDGE_CASCADE": "ambiguous",
        }
    )
    llm = replay_config(llm_stack, ReplayOptions("a1", judge="llm"))
    assert (llm["prompt_version"], llm["cascade"], llm["cascade_threshold"]) == (JUDGE_PROMPT_VERSION, "ambiguous", 0.85)
    with pytest.raises(InvalidInputError, match="prompt files"):
        replay_config(llm_stack, ReplayOptions("a1", judge="llm", prompt_version="judge.v9"))
