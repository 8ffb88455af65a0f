"""Seed 001's validation rules, on real chunking output of the dodge_the_creeps files.

expanded block sha256 == trace sha256; chunk_order strictly increasing; every
payload chunk_id in the file's chunk list with the same order. The pipeline
wiring (a violation fails that file, visibly, and the project goes on) is in
tests/integration/test_ingest_pipeline.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from godot_rag.domain.chunking.direct import chunk_direct
from godot_rag.domain.chunking.validation import validate_chunking
from godot_rag.domain.ingest.policy import projects_from_expanded_text

DODGE_TEXT = Path(__file__).resolve().parent.parent / "corpus" / "ingest" / "dodge_the_creeps.txt"


def dodge_file(name: str):
    (project,) = projects_from_expanded_text(DODGE_TEXT.read_text(encoding="utf-8"), max_bytes=1 << 21)
    return {f.source_file: f for f in project.files}[name]


def chunked(name: str):
    f = dodge_file(name)
    return f, chunk_direct(f.source_file, f.source_kind, f.data, expected_sha256=f.sha256)


def payload(result):
    return [(c.chunk_id, c.chunk_order) for c in result.chunks]


def rules(problems) -> list[str]:
    return [p.rule for p in problems]


def test_every_included_dodge_file_passes_as_chunked():
    (project,) = projects_from_expanded_text(DODGE_TEXT.read_text(encoding="utf-8"), max_bytes=1 << 21)
    checked = 0
    for f in project.files:
        if not f.included or f.source_kind == "gdscript":
            continue
        result = chunk_direct(f.source_file, f.source_kind, f.data, expected_sha256=f.sha256)
        assert validate_chunking(f.data, result, payload(result)) == [], f.source_file
        checked += 1
    assert checked == 25


def test_a_block_that_differs_from_the_trace_fails_the_sha256_rule():
    f, result = chunked("main.tscn")
    problems = validate_chunking(f.data + b"\n; edited after chunking\n", result, payload(result))
    assert rules(problems) == ["sha256"]
    assert result.source_sha256 in problems[0].message


def test_chunk_order_that_does_not_increase_fails():
    f, result = chunked("player.tscn")
    first, second, *rest = result.chunks
    swapped = replace(
        result, chunks=(replace(first, chunk_order=second.chunk_order), replace(second, chunk_order=first.chunk_order), *rest)
    )
    problems = validate_chunking(f.data, swapped, payload(swapped))
    assert "order" in rules(problems)


def test_payload_chunks_must_exist_in_the_file_list_with_the_same_order():
    f, result = chunked("hud.tscn")
    good = payload(result)
    problems = validate_chunking(f.data, result, [*good, ("hud.tscn:node:Ghost", 99)])
    assert rules(problems) == ["membership"] and "hud.tscn:node:Ghost" in problems[0].message
    chunk_id, order = good[1]
    problems = validate_chunking(f.data, result, [(chunk_id, order + 1)])
    assert rules(problems) == ["membership"] and f"order {order + 1}" in problems[0].message


def test_a_duplicate_chunk_id_fails():
    f, result = chunked("mob.tscn")
    first, second, *rest = result.chunks
    dup = replace(result, chunks=(first, replace(second, chunk_id=first.chunk_id), *rest))
    assert "unique" in rules(validate_chunking(f.data, dup, payload(dup)))
