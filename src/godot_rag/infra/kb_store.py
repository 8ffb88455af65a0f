"""Knowledge-base tables: loading (build time) and hybrid search (query time)."""

from __future__ import annotations

import json
from typing import Iterable, Sequence

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from godot_rag.domain.knowledge import KnowledgeRecord, identifier_lexemes
from godot_rag.domain.models import RetrievalHit, RetrieverQuery

SCHEMA = "godot_rag"


class KnowledgeBaseMissing(RuntimeError):
    """The knowledge base was never built in this database."""


def tsquery_literal(lexemes: Iterable[str]) -> str:
    """An OR tsquery of exact lexemes, for a ``::tsquery`` cast (no parser runs)."""
    quoted = []
    for lex in lexemes:
        lex = lex.replace("'", "''").replace("\\", "\\\\")
        if lex:
            quoted.append(f"'{lex}'")
    return " | ".join(quoted)


# ---------------------------------------------------------------- knowledge (sync: build time)

def load_knowledge_sync(dsn: str, records: Sequence[KnowledgeRecord], *, data_version: str, embedding_model: str,
                        embeddings: dict[str, list[float]] | None = None) -> dict[str, int]:
    """Upsert knowledge records and record the KB version. Idempotent."""
    counts: dict[str, int] = {}
    with psycopg.connect(dsn) as conn:
        with conn.cursor() as cur:
            for table in ("docs_chunks", "api_mapping", "label_prototypes"):
                rows = [r for r in records if r.table == table]
                counts[table] = len(rows)
                if not rows:
                    continue
                cur.execute("create temp table kb_stage (id text, source_file text, payload jsonb, embedding vector(384), "
                            "search_text text, lexemes text[]) on commit drop")
                with cur.copy("copy kb_stage (id, source_file, payload, embedding, search_text, lexemes) from stdin") as copy:
                    for r in rows:
                        vec = embeddings.get(r.id) if embeddings else None
                        copy.write_row((
                            r.id, r.source_file, json.dumps(r.payload), None if vec is None else "[" + ",".join(f"{x:.6f}" for x in vec) + "]",
                            r.search_text, list(r.lexemes),
                        ))
                cur.execute(
                    f"""insert into {SCHEMA}.{table} (id, source_file, payload, embedding, search_text, search_tsv)
                    select id, source_file, payload, embedding, search_text,
                           setweight(array_to_tsvector(coalesce(lexemes, '{{}}')), 'A') || setweight(to_tsvector('simple', search_text), 'D')
                    from kb_stage
                    on conflict (id) do update set source_file = excluded.source_file, payload = excluded.payload,
                        embedding = coalesce(excluded.embedding, {SCHEMA}.{table}.embedding),
                        search_text = excluded.search_text, search_tsv = excluded.search_tsv"""
                )
                ids = [r.id for r in rows]
                cur.execute(f"delete from {SCHEMA}.{table} where not (id = any(%s))", (ids,))
                cur.execute("drop table kb_stage")
            cur.execute(
                f"""insert into {SCHEMA}.kb_versions (name, data_version, embedding_model, embedding_dim, record_counts, built_at)
                values ('current', %s, %s, %s, %s, now())
                on conflict (name) do update set data_version = excluded.data_version, embedding_model = excluded.embedding_model,
                  embedding_dim = excluded.embedding_dim, record_counts = excluded.record_counts, built_at = now()""",
                (data_version, embedding_model, 384 if embedding_model != "none" else 0, Jsonb(counts)),
            )
        conn.commit()
    return counts


def kb_version_sync(dsn: str) -> dict | None:
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return conn.execute(f"select * from {SCHEMA}.kb_versions where name = 'current'").fetchone()


async def search(conn, query: RetrieverQuery, *, tables: Sequence[str], limit_per_table: int,
           query_embedding: list[float] | None = None) -> list[RetrievalHit]:
    """Hybrid search over dynamic_retrieval_view with the query alone.

    Components per hit: text (ts_rank_cd over exact identifier lexemes and
    prose), trigram (best similarity of a query term to the record title),
    vector (cosine, when the KB and the query both carry embeddings).
    Fused as a weighted sum of per-table max-normalised scores.
    """
    # Identifiers of the chunk text widen lexical recall (a renamed call the
    # parser did not list still matches its api_mapping row).
    lexemes = identifier_lexemes(" ".join(query.query_terms) + "\n" + query.raw_chunk_text)
    tsq = tsquery_literal(lexemes)
    terms = list(query.query_terms) or lexemes[:20]
    hits: list[RetrievalHit] = []
    if not tsq and query_embedding is None:
        return hits
    vec = None if query_embedding is None else "[" + ",".join(f"{x:.6f}" for x in query_embedding) + "]"
    for table in tables:
        candidates: dict[str, dict] = {}
        if tsq:
            cur = await conn.execute(
                f"""select id, title, content, metadata,
                      ts_rank_cd(search_tsv, %(tsq)s::tsquery) as text_score,
                      (select coalesce(max(similarity(t, title)), 0) from unnest(%(terms)s::text[]) t) as trigram_score
                    from {SCHEMA}.dynamic_retrieval_view
                    where table_name = %(table)s and search_tsv @@ %(tsq)s::tsquery
                    order by text_score desc, id limit %(cand)s""",
                {"tsq": tsq, "terms": terms, "table": table, "cand": max(limit_per_table * 8, 40)},
            )
            for row in await cur.fetchall():
                row["vector_score"] = 0.0
                candidates[row["id"]] = row
        if vec is not None:
            cur = await conn.execute(
                f"""select id, title, content, metadata, 1 - (embedding <=> %(vec)s::vector) as vector_score,
                      (select coalesce(max(similarity(t, title)), 0) from unnest(%(terms)s::text[]) t) as trigram_score
                    from {SCHEMA}.dynamic_retrieval_view
                    where table_name = %(table)s and embedding is not null
                    order by embedding <=> %(vec)s::vector limit %(cand)s""",
                {"vec": vec, "terms": terms, "table": table, "cand": max(limit_per_table * 8, 40)},
            )
            for row in await cur.fetchall():
                if row["id"] in candidates:
                    candidates[row["id"]]["vector_score"] = row["vector_score"]
                else:
                    row["text_score"] = 0.0
                    candidates[row["id"]] = row
        hits.extend(_fuse(table, list(candidates.values()), limit_per_table, with_vector=vec is not None))
    return hits


_WEIGHTS_LEXICAL = {"text": 0.65, "trigram": 0.35}
_WEIGHTS_HYBRID = {"vector": 0.45, "text": 0.35, "trigram": 0.20}


def _fuse(table: str, rows: list[dict], limit: int, *, with_vector: bool) -> list[RetrievalHit]:
    if not rows:
        return []
    max_text = max(float(r["text_score"] or 0) for r in rows) or 1.0
    weights = _WEIGHTS_HYBRID if with_vector else _WEIGHTS_LEXICAL
    scored = []
    for r in rows:
        comp = {
            "text": float(r["text_score"] or 0) / max_text,
            "trigram": float(r["trigram_score"] or 0),
        }
        if with_vector:
            comp["vector"] = max(0.0, float(r["vector_score"] or 0))
        score = sum(weights[k] * comp[k] for k in weights)
        raw = {"text_raw": float(r["text_score"] or 0)}
        scored.append((score, r["id"], r, {**comp, **raw}))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [
        RetrievalHit(table_name=table, record_id=rid, score=round(score, 6), title=r["title"] or "", content=r["content"] or "",
                     metadata=r["metadata"] or {}, component_scores=comp)
        for score, rid, r, comp in scored[:limit]
    ]
