"""The lexical search computed in the retriever gives what PostgreSQL computes on the same tsvectors.

The oracle is SQL over the built knowledge base: the key candidates
(``symbol_tsv @@ q``, idf-weighted key sum, ties by id), ``ts_rank(search_tsv, q)``
and pg_trgm's ``similarity`` of the query terms to the titles. Every case of the
labelled retrieval set (tests/retrieval_set) is compared: the candidates and
the text and trigram scores exactly, the key sums to the last bits (the order a
plan adds them in is the database's choice).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from godot_rag.domain.chunking.files import chunk_file
from godot_rag.domain.ingest.policy import classify_path
from godot_rag.domain.retrieval.fusion import query_lexemes, trigram_terms
from godot_rag.domain.retrieval.lexical_index import LexicalQuery
from godot_rag.domain.retrieval.query import build_retriever_query
from godot_rag.infra import kb_store

CASES = Path(__file__).resolve().parent.parent / "retrieval_set" / "cases.jsonl"
CANDIDATES = 20

ORACLE = """
with q as materialized (
    select s.lexeme, ln((k.n + 1.0) / (s.ndoc + 0.5)) as idf
    from godot_rag.kb_lexeme_stats s,
         (select coalesce((record_counts->>%(table)s)::float8, 1) as n from godot_rag.kb_versions where name = 'current') k
    where s.table_name = %(table)s and s.lexeme = any(%(lex)s::text[])),
keyed as (
    select v.id from godot_rag.dynamic_retrieval_view v cross join lateral unnest(v.symbol_tsv) u join q on q.lexeme = u.lexeme
    where v.table_name = %(table)s and %(tsq)s <> '' and v.symbol_tsv @@ %(tsq)s::tsquery
    group by v.id
    order by sum(q.idf * case u.weights[1] when 'A' then 1.0 when 'B' then 0.4 when 'C' then 0.2 else 0.1 end) desc, v.id
    limit %(cand)s)
select v.id,
    coalesce((select sum(q.idf * case u.weights[1] when 'A' then 1.0 when 'B' then 0.4 when 'C' then 0.2 else 0.1 end)
              from unnest(v.symbol_tsv) u join q on q.lexeme = u.lexeme), 0) as key_score,
    case when %(tsq)s = '' then 0 else ts_rank(v.search_tsv, %(tsq)s::tsquery) end as text_score,
    (select coalesce(max(similarity(t, v.title)), 0) from unnest(%(terms)s::text[]) t) as trigram_score
from godot_rag.dynamic_retrieval_view v
where v.table_name = %(table)s and v.id in (select id from keyed)
"""


def queries() -> list:
    out = []
    for line in CASES.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        case = json.loads(line)
        chunks = {c.chunk_id: c for c in chunk_file(case["file"], classify_path(case["file"])[0], case["source"].encode()).chunks}
        out.append(build_retriever_query(prompt=case["prompt"], chunk=chunks[case["chunk"]]))
    return out


@pytest.fixture(scope="module")
def dsn(stack):
    return stack.runtime["pg_dsn"]


def test_every_candidate_and_score_of_the_retrieval_set_is_postgresqls(dsn):
    async def load():
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            return await kb_store.load_lexical_index(conn)

    index = asyncio.run(load())
    assert len(index) > 40000
    compared = 0
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        for query in queries():
            lexemes = [lex for lex in query_lexemes(query) if lex]
            terms = trigram_terms(query)
            lexical = LexicalQuery.of(lexemes, terms)
            for table in kb_store.TABLES:
                params = {
                    "table": table,
                    "lex": lexemes,
                    "tsq": kb_store.tsquery_literal(lexemes),
                    "terms": terms,
                    "cand": CANDIDATES,
                }
                expected = {
                    r["id"]: (float(r["key_score"]), float(r["text_score"]), float(r["trigram_score"]))
                    for r in conn.execute(ORACLE, params).fetchall()
                }
                found = {r.id: (r.key_score, r.text_score, r.trigram_score) for r in index.candidates(table, lexical, CANDIDATES)}
                assert set(found) == set(expected), (table, query.query_text)
                for rid, (key, text, trigram) in found.items():
                    # A key sum's last bit follows the order the database's plan adds the keys in.
                    assert key == pytest.approx(expected[rid][0], rel=1e-12, abs=0), (table, rid, query.query_text)
                    assert (text, trigram) == expected[rid][1:], (table, rid, query.query_text)
                compared += len(found)
    assert compared > 5000
