"""The cut that dropped a knowledge record, named from its ranking facts."""

from __future__ import annotations

from dataclasses import replace

from godot_rag.domain.retrieval.why_not import (
    CUT_CANDIDATES,
    CUT_LIMIT,
    CUT_RETRIEVED,
    CUT_TABLE,
    RankFacts,
    SearchRank,
    explain,
)

TABLES = ("api_mapping", "label_prototypes", "docs_chunks")
BASE = RankFacts(
    table="docs_chunks",
    record_id="docs:4:Vector2",
    title="Vector2",
    searched=True,
    tables_searched=TABLES,
    ranks=(
        SearchRank("keys", 5.6, 162, 460),
        SearchRank("vector", 0.28, 172, 2084),
        SearchRank("text", 0.02, 69, 4997),
        SearchRank("trigram", 1.0, 7, 35083),
    ),
    candidates_per_index=20,
    key_candidate=False,
    vector_candidate=False,
    candidate_count=40,
    fused_score=0.44,
    fused_rank=17,
    limit_per_table=5,
    last_kept_score=0.93,
)


def test_dropped_at_candidate_selection_names_both_index_ranks():
    e = explain(BASE)
    assert e.cut == CUT_CANDIDATES
    assert "rank 162 > 20" in e.summary and "rank 172 > 20" in e.summary
    assert any("would rank 17 of 40" in d for d in e.details)
    assert e.details[0].startswith("key index (exact identifiers): rank 162 of 460")


def test_no_shared_key_and_no_vector_search():
    f = replace(
        BASE,
        ranks=(
            SearchRank("keys", None, None, 20),
            SearchRank("vector", None, None, 0, used=False),
            SearchRank("text", None, None, 99),
            SearchRank("trigram", 0.05, 689, 1429),
        ),
    )
    e = explain(f)
    assert e.cut == CUT_CANDIDATES
    assert "shares no key" in e.summary and "vector (cosine similarity) did not run" in e.summary


def test_dropped_by_the_table_limit():
    f = replace(BASE, key_candidate=True, fused_rank=8, fused_score=0.31, last_kept_score=0.35)
    e = explain(f)
    assert e.cut == CUT_LIMIT
    assert "ranks 8 of 40" in e.summary and "best 5" in e.summary and "0.3500" in e.summary and "key index" in e.summary


def test_retrieved_and_stored():
    f = replace(BASE, key_candidate=True, vector_candidate=True, fused_rank=1, fused_score=0.78, stored_rank=1)
    e = explain(f)
    assert e.cut == CUT_RETRIEVED and "rank 1 of 40" in e.summary
    assert not any("not among the hits stored" in d for d in e.details)
    e = explain(replace(f, stored_rank=None, kb_changed=True))
    assert any("not among the hits stored" in d for d in e.details) and any("rebuilt" in d for d in e.details)


def test_table_not_searched_comes_first():
    e = explain(replace(BASE, searched=False, tables_searched=("api_mapping",), key_candidate=True, fused_rank=1))
    assert e.cut == CUT_TABLE and "searched: api_mapping" in e.summary
