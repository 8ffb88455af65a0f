"""A repeated query is searched once: the search cache keys on everything that decides the hits."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

from godot_rag import convert
from godot_rag.domain.models import RetrievalHit, RetrieverQuery
from godot_rag.infra.rows import KbVersionRow
from godot_rag.pipeline.retrieval import KbVersionCache, SearchCache, retrieval_key, retrieve


def kb_row(data_version: str) -> KbVersionRow:
    return KbVersionRow("current", data_version, "none", 0, {}, datetime.now(UTC))


class RecordingKnowledgeBase:
    """The Store methods retrieve() calls, recording every search it makes; ``stored`` holds the hits
    earlier analyses saved, by retrieval key."""

    def __init__(self):
        self.version = kb_row("kb-1")
        self.searches: list[tuple[RetrieverQuery, int]] = []
        self.stored: dict[str, list[dict]] = {}

    async def stored_hits(self, key):
        return self.stored.get(key)

    async def kb_version(self):
        return self.version

    async def search(self, query, *, tables, limit_per_table, query_embedding=None, kb_version=""):
        self.searches.append((query, limit_per_table))
        return [RetrievalHit("docs_chunks", f"docs:{len(self.searches)}", 1.0, "t", "c", {}, {})]


QUERY = RetrieverQuery(
    query_text="move_and_slide",
    query_terms=("move_and_slide",),
    raw_chunk_text="move_and_slide(velocity)",
    api_call_candidates=("move_and_slide",),
    prompt_terms=("Godot 3",),
    intent="version_check",
)


def run(coro):
    return asyncio.run(coro)


def test_the_same_query_is_searched_once_and_gets_the_same_hits():
    kb = RecordingKnowledgeBase()
    versions = KbVersionCache(kb, ttl_s=0)
    cache = SearchCache()
    first, v1 = run(retrieve(kb, versions, QUERY, 5, None, cache))
    again, v2 = run(retrieve(kb, versions, replace(QUERY), 5, None, cache))
    assert len(kb.searches) == 1 and first == again and v1 == v2 == "kb-1/lexical"
    assert (cache.hits, cache.misses) == (1, 1)


def test_anything_that_changes_the_hits_searches_again():
    kb = RecordingKnowledgeBase()
    versions = KbVersionCache(kb, ttl_s=0)
    cache = SearchCache()
    run(retrieve(kb, versions, QUERY, 5, None, cache))
    run(retrieve(kb, versions, QUERY, 8, None, cache))  # another limit (a replay)
    run(retrieve(kb, versions, replace(QUERY, prompt_terms=("Godot 4",)), 5, None, cache))  # another prompt
    run(retrieve(kb, versions, replace(QUERY, intent="migration"), 5, None, cache))  # another table order
    run(retrieve(kb, versions, replace(QUERY, reference_candidates=("Player",)), 5, None, cache))
    kb.version = kb_row("kb-2")  # a rebuilt knowledge base
    _, version = run(retrieve(kb, versions, QUERY, 5, None, cache))
    assert len(kb.searches) == 6 and version == "kb-2/lexical"


def test_the_cache_keeps_only_the_most_recent_entries():
    kb = RecordingKnowledgeBase()
    versions = KbVersionCache(kb, ttl_s=0)
    cache = SearchCache(capacity=2)
    queries = [replace(QUERY, raw_chunk_text=f"move_and_slide({n})") for n in range(3)]
    for q in queries:
        run(retrieve(kb, versions, q, 5, None, cache))
    run(retrieve(kb, versions, queries[2], 5, None, cache))  # still held
    run(retrieve(kb, versions, queries[0], 5, None, cache))  # evicted: searched again
    assert len(kb.searches) == 4


def test_a_stored_retrieval_with_the_same_key_answers_without_a_search_unless_reuse_is_off():
    kb = RecordingKnowledgeBase()
    versions = KbVersionCache(kb, ttl_s=0)
    stored = RetrievalHit("api_mapping", "api:stored", 0.5, "KinematicBody2D -> CharacterBody2D", "c", {}, {"keys": 1.0})
    kb.stored[retrieval_key(QUERY, "kb-1/lexical", 5)] = [convert.hit_to_dict(stored)]
    hits, _ = run(retrieve(kb, versions, QUERY, 5, None, SearchCache()))
    assert [h.record_id for h in hits] == ["api:stored"] and kb.searches == []
    run(retrieve(kb, versions, QUERY, 8, None, SearchCache()))  # another limit: another key
    run(retrieve(kb, versions, QUERY, 5, None, SearchCache(), reuse=False))  # a replay searches again
    assert len(kb.searches) == 2
