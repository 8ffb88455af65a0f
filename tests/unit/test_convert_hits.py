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
    RetrievalHit(
        table_name="docs_chunks", record_id="docs:4:Node", score=0.0, title="", content="", metadata={}, component_scores={}
    ),
    RetrievalHit(
        table_name="label_prototypes",
        record_id="proto:x",
        score=1.0,
        title="t",
        content="ünïcode ✓",
        metadata={"x": None},
        component_scores={"keys": 2.0, "text": 1e-9},
    ),
]


@pytest.mark.parametrize("hit", HITS)
def test_hit_to_dict_is_the_protobuf_dict(hit):
    assert convert.hit_to_dict(hit) == convert.to_dict(convert.hit_to_pb(hit))


@pytest.mark.parametrize("hit", HITS)
def test_hit_from_dict_reads_what_the_protobuf_path_reads(hit):
    stored = convert.to_dict(convert.hit_to_pb(hit))
    assert convert.hit_from_dict(stored) == convert.hit_from_pb(convert.from_dict(stored, pb.RetrievalHit)) == hit


@pytest.mark.parametrize("hit", HITS)
def test_metadata_encoded_once_is_what_would_be_encoded(hit):
    """The retriever's record details carry the metadata's text: a hit stored with it is the same document."""
    from dataclasses import replace

    from godot_rag.domain.models import encode_metadata

    encoded = replace(hit, metadata_json=encode_metadata(hit.metadata))
    assert convert.hit_to_dict(encoded) == convert.hit_to_dict(hit)
    assert convert.hit_to_pb(encoded) == convert.hit_to_pb(hit)
    # Read back, the hit keeps the text it was stored with, and equals the original.
    assert convert.hit_from_dict(convert.hit_to_dict(hit)).metadata_json == encode_metadata(hit.metadata)


def test_the_same_metadata_text_is_decoded_once_and_shared():
    stored = convert.hit_to_dict(HITS[0])
    a, b = convert.hit_from_dict(dict(stored)), convert.hit_from_dict(dict(stored))
    assert a.metadata == HITS[0].metadata
    assert a.metadata is b.metadata
    other = convert.hit_from_dict({**stored, "metadata_json": '{"old_symbol": "Spatial"}'})
    assert other.metadata == {"old_symbol": "Spatial"}


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


def test_query_to_dict_is_the_protobuf_dict_for_every_sample_chunk():
    from godot_rag.domain.models import RetrieverQuery
    from godot_rag.domain.retrieval.query import build_retriever_query

    queries = [build_retriever_query(prompt="Is this Godot 3 or Godot 4?", chunk=c) for c in _sample_chunks()]
    assert {q.direct_chunk for q in queries} == {True, False}
    for query in [*queries, RetrieverQuery(query_text="", query_terms=(), raw_chunk_text="")]:
        stored = convert.query_to_dict(query)
        assert stored == convert.to_dict(convert.query_to_pb(query))
        assert convert.query_from_pb(convert.from_dict(stored, pb.RetrieverQuery)) == query


def test_search_hits_carry_the_metadata_text_of_their_record():
    from godot_rag.domain.models import encode_metadata
    from godot_rag.domain.retrieval.search import RecordDetails, hits_of

    meta = {"old_symbol": "KinematicBody2D", "new_symbol": "CharacterBody2D"}
    known = RecordDetails()
    known.put(("api_mapping", "r1"), {"content": "c", "metadata": meta, "metadata_json": encode_metadata(meta)})
    known.put(("docs_chunks", "d1"), {"content": "d", "metadata": {"x": 1}})  # read before the text was kept
    kept = [("api_mapping", 0.9, {"id": "r1", "title": "t"}, {"keys": 1.0}), ("docs_chunks", 0.5, {"id": "d1", "title": None}, {})]
    first, second = hits_of(kept, known)
    assert first.metadata_json == encode_metadata(meta)
    assert convert.hit_to_dict(first)["metadata_json"] == encode_metadata(meta)
    assert second.metadata_json == "" and convert.hit_to_dict(second)["metadata_json"] == encode_metadata({"x": 1})
