"""What makes two searches the same search (``Search``): what the ranking reads, and nothing else."""

from __future__ import annotations

from dataclasses import replace

import pytest

from godot_rag.domain.models import RetrieverQuery
from godot_rag.domain.retrieval.search import TABLES, Search, SearchResults

SCENE_NODE = RetrieverQuery(
    query_text="KinematicBody2D collision_layer",
    query_terms=("KinematicBody2D", "collision_layer", "Godot 3"),
    raw_chunk_text='[node name="Player" type="KinematicBody2D"]\ncollision_layer = 3\n',
    api_call_candidates=("KinematicBody2D", "collision_layer"),
    prompt_terms=("Godot 3",),
    intent="version_check",
    direct_chunk=True,
)

SCRIPT = RetrieverQuery(
    query_text="move_and_slide",
    query_terms=("move_and_slide",),
    raw_chunk_text="func _physics_process(delta):\n\tvelocity = move_and_slide(velocity)\n",
    api_call_candidates=("move_and_slide",),
    prompt_terms=("Godot 3",),
    intent="version_check",
)


def search(query: RetrieverQuery, vector=None, tables=TABLES, limit=5) -> Search:
    return Search.of(query, tables=tables, limit_per_table=limit, query_embedding=vector)


def test_direct_chunks_with_the_same_keys_and_other_values_are_one_search():
    other = replace(SCENE_NODE, raw_chunk_text='[node name="Enemy" type="KinematicBody2D"]\ncollision_layer = 8\n')
    assert search(SCENE_NODE) == search(other) and hash(search(SCENE_NODE)) == hash(search(other))
    # A direct chunk is searched without a vector: one given does not make it another search.
    assert search(SCENE_NODE, vector=[0.1] * 4) == search(SCENE_NODE)


def test_what_the_ranking_reads_makes_another_search():
    assert search(SCENE_NODE) != search(replace(SCENE_NODE, query_terms=("KinematicBody2D", "Godot 3")))
    assert search(SCENE_NODE) != search(SCENE_NODE, limit=6)
    assert search(SCENE_NODE) != search(SCENE_NODE, tables=tuple(reversed(TABLES)))


def test_a_script_chunk_is_searched_by_its_code_identifiers_and_its_vector():
    # The identifiers of a script chunk's code are lexemes of its search (chunk_identifiers).
    renamed = replace(SCRIPT, raw_chunk_text=SCRIPT.raw_chunk_text.replace("velocity", "motion"))
    assert search(SCRIPT) != search(renamed)
    assert search(SCRIPT, vector=[0.5, 0.5]) == search(SCRIPT, vector=[0.5, 0.5])
    assert search(SCRIPT, vector=[0.5, 0.5]) != search(SCRIPT, vector=[0.5, 0.25])


def test_an_unknown_table_is_refused():
    with pytest.raises(ValueError, match="unknown knowledge table"):
        search(SCRIPT, tables=("docs_chunks", "nope"))


def test_results_are_kept_for_the_newest_searches():
    results = SearchResults(capacity=2)
    a, b, c = search(SCRIPT, vector=[1.0]), search(SCRIPT, vector=[2.0]), search(SCRIPT, vector=[3.0])
    results.put(a, [])
    results.put(b, [])
    assert results.get(a) == []  # a is now the newest
    results.put(c, [])
    assert results.get(b) is None and results.get(a) == [] and results.get(c) == [] and len(results) == 2
    assert (results.hits, results.misses) == (3, 1)
