"""The lexical search computed in the retriever (domain/retrieval/lexical_index.py): PostgreSQL's definitions.

The expected figures come from PostgreSQL itself: ts_rank from its documented
regression outputs (src/test/regress/expected/tsearch.out), similarity from
pg_trgm's (contrib/pg_trgm/expected/pg_trgm.out); the integration test
tests/integration/test_lexical_search_db.py compares whole searches with the database.
"""

from __future__ import annotations

import math
import random

import pytest

from godot_rag.domain.retrieval import lexical_index
from godot_rag.domain.retrieval.lexical_index import (
    LexicalIndex,
    LexicalQuery,
    parse_tsvector,
    similarity,
    text_rank,
    trigrams,
)


def rank(tsvector: str, *lexemes: str) -> float:
    return text_rank(" " + tsvector, LexicalQuery.of(lexemes, ()))


def test_the_text_form_of_a_tsvector_is_read_back_exactly():
    assert parse_tsvector("'a''b':1A 'c\\\\d':2B,3 'plain' 'x y':4C") == {"a'b": "1A", "c\\d": "2B,3", "plain": "", "x y": "4C"}
    assert parse_tsvector("") == {}


@pytest.mark.parametrize(
    ("tsvector", "query", "expected"),
    [
        # SELECT ts_rank(' a:1 s:2C d g'::tsvector, 'a | s') and its neighbours in tsearch.out
        ("'a':1 'd' 'g' 's':2C", ("a", "s"), 0.091189064),
        ("'a':1 'd' 'g' 'sa':2C", ("a", "s"), 0.030396355),
        ("'a':1 'd' 'g' 's':2B", ("a", "s"), 0.15198177),
        ("'a':1 'd' 'g' 's':2", ("a", "s"), 0.06079271),
    ],
)
def test_ts_rank_of_an_or_query_is_postgresqls(tsvector, query, expected):
    assert rank(tsvector, *query) == expected


def test_ts_rank_counts_every_position_of_a_lexeme_and_is_zero_without_a_match():
    one = rank("'move':1A", "move")
    repeated = rank("'move':1A,5,9B", "move")
    assert 0 < one < repeated
    assert rank("'move':1A", "slide") == 0.0
    assert rank("", "move") == 0.0
    assert rank("'move':1A") == 0.0
    # A quoted lexeme is found whole, never inside another one.
    assert rank("'move_and_slide':1A", "move") == 0.0
    assert rank("'it''s':1A", "it's") == rank("'its':1A", "its")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # pg_trgm.out: select similarity('wow','WOWa '), similarity('wow',' WOW '), similarity('---', '####---')
        ("wow", "WOWa ", 0.5),
        ("wow", " WOW ", 1.0),
        ("---", "####---", 0.0),
    ],
)
def test_trigram_similarity_is_pg_trgms(a, b, expected):
    assert similarity(trigrams(a), trigrams(b)) == expected


def test_trigrams_split_words_at_anything_but_letters_and_digits():
    assert trigrams("is_on_floor") == trigrams("is on floor")
    assert trigrams("Vector2") == frozenset({"  v", " ve", "vec", "ect", "cto", "tor", "or2", "r2 "})


def _index() -> LexicalIndex:
    rows = [
        # (table, id, title, symbol_tsv, search_tsv)
        ("api_mapping", "m:b", "move_and_slide", "'move_and_slide':1A", "'move_and_slide':1A 'velocity':2"),
        ("api_mapping", "m:a", "move_and_slide", "'move_and_slide':1A", "'move_and_slide':1A"),
        ("api_mapping", "m:c", "KinematicBody2D", "'kinematicbody2d':1A 'move_and_slide':2B", "'kinematicbody2d':1A"),
        ("api_mapping", "m:d", "yield", "'yield':1A", "'yield':1A"),
        ("docs_chunks", "d:a", "Node", "'node':1A", "'node':1A"),
    ]
    return LexicalIndex.from_rows("v1/model", rows, {"api_mapping": 4, "docs_chunks": 1})


def test_key_candidates_are_ranked_by_idf_times_key_weight_with_ties_by_id():
    index = _index()
    query = LexicalQuery.of(["move_and_slide", "kinematicbody2d"], [])
    idf = {lex: math.log(5 / (n + 0.5)) for lex, n in (("move_and_slide", 3), ("kinematicbody2d", 1))}
    assert index.key_scores("api_mapping", query) == {
        "m:a": idf["move_and_slide"],
        "m:b": idf["move_and_slide"],
        "m:c": idf["kinematicbody2d"] + 0.4 * idf["move_and_slide"],
    }
    assert index.key_candidates("api_mapping", query, 3) == ["m:c", "m:a", "m:b"]
    assert index.key_candidates("api_mapping", query, 2) == ["m:c", "m:a"]  # the tie at the cut goes to the first id
    assert index.key_candidates("api_mapping", LexicalQuery.of(["nothing"], []), 3) == []
    assert index.key_candidates("label_prototypes", query, 3) == []


def test_candidates_are_the_key_candidates_and_the_ones_asked_for_each_with_every_component():
    index = _index()
    query = LexicalQuery.of(["move_and_slide"], ["move_and_slide"])
    found = {r.id: r for r in index.candidates("api_mapping", query, 1, also=["m:d", "unknown"])}
    assert set(found) == {"m:a", "m:d"}
    assert found["m:a"].trigram_score == 1.0 and found["m:a"].text_score > 0 and found["m:a"].key_score > 0
    assert (found["m:d"].key_score, found["m:d"].text_score) == (0.0, 0.0)
    # Without lexemes (the vector search alone) only the records asked for come back; the trigram still counts.
    alone = index.candidates("api_mapping", LexicalQuery.of([], ["yield"]), 5, also=["m:d"])
    assert [(r.id, r.key_score, r.text_score, r.trigram_score) for r in alone] == [("m:d", 0.0, 0.0, 1.0)]


def test_candidates_text_scores_are_the_text_forms_ts_rank_while_the_parsed_texts_held_stay_bounded(monkeypatch):
    # A candidate's text score comes from its parsed search_tsv, kept per record; it must be the ts_rank of the
    # text form, and the records kept must not grow past TEXT_TERMS_HELD however many records become candidates.
    monkeypatch.setattr(lexical_index, "TEXT_TERMS_HELD", 2)
    index = _index()
    query = LexicalQuery.of(["move_and_slide", "velocity", "kinematicbody2d"], [])
    texts = {"m:a": "'move_and_slide':1A", "m:b": "'move_and_slide':1A 'velocity':2", "m:c": "'kinematicbody2d':1A"}
    for _ in range(3):
        found = {r.id: r.text_score for r in index.candidates("api_mapping", query, 5, also=["m:d"])}
        assert found == {**{rid: rank(text, *query.lexemes) for rid, text in texts.items()}, "m:d": 0.0}
        assert found["m:b"] > found["m:a"] > 0
        assert len(index._tables["api_mapping"].terms) <= 2


def test_whole_table_scores_cover_exactly_the_records_that_match():
    index = _index()
    query = LexicalQuery.of(["velocity", "move_and_slide"], ["kinematic"])
    assert set(index.text_scores("api_mapping", query)) == {"m:a", "m:b"}
    assert index.text_scores("api_mapping", LexicalQuery.of([], [])) == {}
    trig = index.trigram_scores("api_mapping", query)
    assert set(trig) == {"m:a", "m:b", "m:c", "m:d"} and max(trig, key=lambda rid: trig[rid]) == "m:c"
    assert index.has("docs_chunks", "d:a") and not index.has("docs_chunks", "m:a") and len(index) == 5


def test_an_index_prints_short():
    # An index travels in coroutine arguments and log records: its postings must never be printed.
    assert repr(_index()) == "LexicalIndex('v1/model', 5 records)"


def test_a_titles_best_term_similarity_is_the_best_of_every_terms():
    """LexicalQuery.best_similarity counts from the title's trigrams; it must equal the plain maximum of
    pg_trgm's similarity over the terms, on identifiers like the knowledge base's and on random words."""
    rng = random.Random(7)
    words = [
        "KinematicBody2D",
        "move_and_slide",
        "CharacterBody2D",
        "velocity",
        "get_node",
        "Node2D",
        "yield",
        "connect",
        "Vector2",
        "is_on_floor",
        "set_process",
        "queue_free",
        "Area2D",
        "body_entered",
        "ab",
        "x",
    ]
    alphabet = "abcdexyz_29"
    for _ in range(400):
        terms = [
            rng.choice(words) if rng.random() < 0.6 else "".join(rng.choices(alphabet, k=rng.randint(1, 9)))
            for _ in range(rng.randint(0, 12))
        ]
        title = (
            " ".join(rng.choice(words) for _ in range(rng.randint(0, 3)))
            if rng.random() < 0.7
            else "".join(rng.choices(alphabet, k=rng.randint(0, 12)))
        )
        query = LexicalQuery.of([], terms)
        grams = trigrams(title)
        assert query.best_similarity(grams) == max((similarity(t, grams) for t in query.term_trigrams), default=0.0)
