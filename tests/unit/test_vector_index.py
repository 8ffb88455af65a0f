"""The vector search's candidates (domain/retrieval/vector_index.py): exact cosine neighbours per table."""

from __future__ import annotations

import random

import numpy as np
import pytest

from godot_rag.domain.retrieval import search
from godot_rag.domain.retrieval.vector_index import VectorIndex


def _brute_force(rows, table, query, k):
    def cosine(a, b):
        dot = sum(x * y for x, y in zip(a, b))
        na = sum(x * x for x in a) ** 0.5
        nb = sum(x * x for x in b) ** 0.5
        return dot / (na * nb)

    scored = sorted(((-cosine(v, query), rid) for t, rid, v in rows if t == table), key=lambda p: (round(p[0], 5), p[1]))
    return [rid for _, rid in scored[:k]]


def test_nearest_agrees_with_a_brute_force_cosine_ranking_per_table():
    rng = random.Random(7)
    rows = [(t, f"{t[:3]}{i:03d}", [rng.gauss(0, 1) for _ in range(16)]) for t in ("docs", "api") for i in range(150)]
    index = VectorIndex.from_rows("v1/model", rows)
    assert len(index) == 300 and index.version == "v1/model"
    for _ in range(20):
        query = [rng.gauss(0, 1) for _ in range(16)]
        for table in ("docs", "api"):
            assert index.nearest(table, query, 20) == _brute_force(rows, table, query, 20)
    # Only the table asked for is ranked.
    assert all(i.startswith("doc") for i in index.nearest("docs", rows[0][2], 150))


def test_a_records_own_vector_finds_it_first_whatever_its_length():
    rows = [("t", "a", [1.0, 0.0, 0.0]), ("t", "b", [0.0, 1.0, 0.0]), ("t", "c", [0.7, 0.7, 0.0])]
    index = VectorIndex.from_rows("v", rows)
    assert index.nearest("t", [5.0, 0.0, 0.0], 1) == ["a"]  # cosine: the length of a vector does not count
    assert index.nearest("t", [0.0, 0.2, 0.0], 3) == ["b", "c", "a"]


def test_ties_at_the_cut_are_settled_by_id_so_the_candidates_do_not_depend_on_load_order():
    rows = [("t", rid, [1.0, 0.0]) for rid in ("d", "b", "a", "c")] + [("t", "z", [0.0, 1.0])]
    for ordering in (rows, list(reversed(rows))):
        assert VectorIndex.from_rows("v", ordering).nearest("t", [1.0, 0.0], 2) == ["a", "b"]


def test_edges_answer_nothing_or_refuse_a_vector_of_another_model():
    index = VectorIndex.from_rows("v", [("t", "a", [1.0, 0.0]), ("t", "zero", [0.0, 0.0])])
    assert len(index) == 1  # a zero vector has no direction
    assert index.nearest("t", [0.0, 0.0], 5) == []
    assert index.nearest("unknown", [1.0, 0.0], 5) == []
    assert index.nearest("t", [1.0, 0.0], 0) == []
    assert index.nearest("t", [1.0, 0.0], 9) == ["a"]
    assert VectorIndex.from_rows("", []).nearest("t", [1.0], 3) == []
    with pytest.raises(ValueError, match="3 dimensions"):
        index.nearest("t", [1.0, 0.0, 0.0], 1)


def test_a_records_cosine_is_the_same_whichever_records_are_asked_about():
    rng = np.random.default_rng(7)
    rows = [("docs_chunks", f"d{i:03d}", rng.normal(size=384).tolist()) for i in range(300)]
    index = VectorIndex.from_rows("v", rows)
    query = rng.normal(size=384).tolist()
    everything = index.all_similarities("docs_chunks", query)
    for ids in (["d007"], ["d007", "d100", "d299"], [r[1] for r in rows[:64]]):
        assert index.similarities("docs_chunks", ids, query) == {rid: everything[rid] for rid in ids}
    cosines = index.against("docs_chunks", query)
    assert cosines.nearest(5) == index.nearest("docs_chunks", query, 5)
    assert cosines.get("d007") == everything["d007"] and cosines.get("missing") is None
    assert index.against("api_mapping", query).nearest(3) == [] and index.all_similarities("api_mapping", query) == {}


def test_every_candidate_gets_its_cosine_from_the_index_and_none_without_a_vector():
    index = VectorIndex.from_rows("v", [("docs_chunks", "d1", [1.0, 0.0]), ("docs_chunks", "d2", [0.0, 2.0])])
    assert index.similarities("docs_chunks", ["d2", "member-without-vector", "d1"], [3.0, 3.0]) == pytest.approx(
        {"d1": 0.7071068, "d2": 0.7071068}
    )
    rows = [
        {"table_name": "docs_chunks", "id": "d1"},
        {"table_name": "docs_chunks", "id": "member"},
        {"table_name": "api_mapping", "id": "d1"},
    ]
    scored = search.with_vector_scores(rows, index, [1.0, 0.0])
    assert [r["vector_score"] for r in scored] == [pytest.approx(1.0), None, None]  # the same id in another table has none
    assert [r["vector_score"] for r in search.with_vector_scores(rows, index, None)] == [None, None, None]


def test_record_details_keep_the_most_recently_used_records():
    details = search.RecordDetails(capacity=2)
    details.put(("api_mapping", "a"), {"content": "a"})
    details.put(("api_mapping", "b"), {"content": "b"})
    assert details.get(("api_mapping", "a")) == {"content": "a"}  # a is now the most recent
    details.put(("docs_chunks", "c"), {"content": "c"})
    assert details.get(("api_mapping", "b")) is None and len(details) == 2
    assert details.get(("docs_chunks", "c")) == {"content": "c"} and details.get(("api_mapping", "a")) is not None


def test_an_index_prints_short():
    index = VectorIndex.from_rows("v", [("docs_chunks", f"d{i}", [1.0, float(i)]) for i in range(3000)])
    assert repr(index) == "VectorIndex('v', 3000 vectors)"
    assert repr(index.against("docs_chunks", [1.0, 0.0])) == "Similarities(3000 records)"
