"""Stored hits are written and read without the protobuf round trip: the shortcut must give what it gave."""

from __future__ import annotations

import math

import pytest

from godot_rag import convert
from godot_rag.domain.models import RetrievalHit
from godot_rag.v1 import messages_pb2 as pb

HITS = [
    RetrievalHit(
        table_name="api_mapping",
        record_id="rename:class_renames:KinematicBody2D",
        score=0.8123,
        title="KinematicBody2D -> CharacterBody2D",
        content="Renamed class.",
        metadata={"old_symbol": "KinematicBody2D", "n": 3, "nested": {"a": [1, 2]}},
        component_scores={"keys": 1.0, "vector": 0.41, "trigram": 0.0},
    ),
    RetrievalHit(table_name="docs_chunks", record_id="docs:4:Node", score=0.0, title="", content="", metadata={}, component_scores={}),
    RetrievalHit(
        table_name="label_prototypes", record_id="proto:x", score=1.0, title="t", content="ünïcode ✓",
        metadata={"x": None}, component_scores={"keys": 2.0, "text": 1e-9},
    ),
]


@pytest.mark.parametrize("hit", HITS)
def test_hit_to_dict_is_the_protobuf_dict(hit):
    assert convert.hit_to_dict(hit) == convert.to_dict(convert.hit_to_pb(hit))


@pytest.mark.parametrize("hit", HITS)
def test_hit_from_dict_reads_what_the_protobuf_path_reads(hit):
    stored = convert.to_dict(convert.hit_to_pb(hit))
    assert convert.hit_from_dict(stored) == convert.hit_from_pb(convert.from_dict(stored, pb.RetrievalHit)) == hit


def test_non_finite_scores_follow_the_json_mapping():
    hit = RetrievalHit("docs_chunks", "r", math.inf, "", "", {}, {"vector": -math.inf})
    assert convert.hit_to_dict(hit) == convert.to_dict(convert.hit_to_pb(hit))
    back = convert.hit_from_dict(convert.hit_to_dict(hit))
    assert back.score == math.inf and back.component_scores["vector"] == -math.inf


def test_a_sparse_stored_hit_reads_with_defaults():
    assert convert.hit_from_dict({"table": "docs_chunks", "record_id": "r"}) == convert.hit_from_pb(
        convert.from_dict({"table": "docs_chunks", "record_id": "r"}, pb.RetrievalHit)
    )


def _sample_chunks():
    from pathlib import Path

    from godot_rag.domain.chunking.files import chunk_file
    from godot_rag.domain.ingest.policy import classify_path

    root = Path(__file__).resolve().parents[2] / "samples"
    for path in sorted(root.rglob("*")):
        if path.is_file() and classify_path(path.name)[0] in ("gdscript", "scene", "resource", "project_config", "import_meta"):
            yield from chunk_file(path.name, classify_path(path.name)[0], path.read_bytes()).chunks


def test_chunk_from_dict_reads_what_the_protobuf_path_reads():
    chunks = list(_sample_chunks())
    assert len({c.chunk_kind for c in chunks}) >= 6
    for chunk in chunks:
        stored = convert.to_dict(convert.chunk_to_pb(chunk))
        assert convert.chunk_from_dict(stored) == convert.chunk_from_pb(convert.from_dict(stored, pb.Chunk)) == chunk
    # Fields left out (a chunk stored by an older producer) read as the protobuf defaults.
    assert convert.chunk_from_dict({"chunk_id": "x"}) == convert.chunk_from_pb(convert.from_dict({"chunk_id": "x"}, pb.Chunk))
