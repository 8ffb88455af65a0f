"""Knowledge-base tables: loading (build time), the embedding cache, and the search's I/O (query time).

The search itself runs in the searching process, over indexes loaded once per
knowledge-base version: the records' keys and text (``load_lexical_index``, the
tsvectors the loader wrote) and their vectors (``load_vector_index``); what is a
candidate and how it scores is ``godot_rag.domain.retrieval.search``. The
database answers the content and metadata of the hits kept (``read_details``),
which a caller that searches often keeps (``RecordDetails``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence

import psycopg
from psycopg.rows import dict_row, tuple_row
from psycopg.types.json import Jsonb
from threadpoolctl import threadpool_limits

from godot_rag.domain.models import RetrievalHit, RetrieverQuery, encode_metadata
from godot_rag.domain.retrieval.fusion import (
    DEFAULT_CONFIG,
    SearchConfig,
)
from godot_rag.domain.retrieval.knowledge import KnowledgeRecord
from godot_rag.domain.retrieval.lexical_index import LexicalIndex
from godot_rag.domain.retrieval.search import TABLES, RecordDetails, hits_of, rank, rank_facts
from godot_rag.domain.retrieval.vector_index import VectorIndex
from godot_rag.domain.retrieval.why_not import RankFacts
from godot_rag.infra.rows import KbVersionRow

SCHEMA = "godot_rag"


def _lex_quote(lex: str) -> str:
    return "'" + lex.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_literal(lexemes: Iterable[str]) -> str:
    """An OR tsquery of exact lexemes, for a ``::tsquery`` cast (no parser runs)."""
    return " | ".join(_lex_quote(lex) for lex in lexemes if lex)


def tsvector_literal(weighted: Iterable[tuple[str, str]]) -> str:
    """A tsvector of exact lexemes with weights, for a ``::tsvector`` cast.

    Weights live on positions in PostgreSQL (a position-less lexeme has none),
    so every key gets a position of its own.
    """
    parts: list[str] = []
    seen: set[str] = set()
    pos = 0
    for lex, weight in weighted:
        if not lex or lex in seen:
            continue
        seen.add(lex)
        pos += 1
        parts.append(f"{_lex_quote(lex)}:{pos}{weight}")
    return " ".join(parts)


def record_keys(r: KnowledgeRecord) -> str:
    return tsvector_literal([(x, "A") for x in r.lexemes] + [(x, "B") for x in r.lexemes_b])


def record_code_keys(r: KnowledgeRecord) -> str:
    return tsvector_literal([(x, "C") for x in r.lexemes_c])


# ---------------------------------------------------------------- embedding cache (sync: build time)


def cached_shas_sync(conn: psycopg.Connection, model: str, shas: Sequence[str]) -> set[str]:
    rows = conn.execute(
        f"select text_sha256 from {SCHEMA}.embedding_cache where model = %s and text_sha256 = any(%s)", (model, list(shas))
    ).fetchall()
    return {r[0] for r in rows}


def put_embeddings_sync(conn: psycopg.Connection, model: str, items: Iterable[tuple[str, str]]) -> int:
    """Insert (sha256, pgvector literal) pairs; existing keys are kept."""
    n = 0
    with conn.cursor() as cur:
        cur.execute("create temp table if not exists emb_stage (text_sha256 text, embedding text) on commit drop")
        with cur.copy("copy emb_stage (text_sha256, embedding) from stdin") as copy:
            for sha, vec in items:
                copy.write_row((sha, vec))
                n += 1
        cur.execute(
            f"""insert into {SCHEMA}.embedding_cache (model, text_sha256, embedding)
                        select %s, text_sha256, embedding::vector from emb_stage on conflict do nothing""",
            (model,),
        )
        cur.execute("drop table emb_stage")
    conn.commit()
    return n


# ---------------------------------------------------------------- knowledge (sync: build time)


def load_knowledge_sync(
    dsn: str,
    records: Sequence[KnowledgeRecord],
    *,
    data_version: str,
    embedding_model: str,
    embedding_dim: int,
    embed_shas: dict[str, str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, int]:
    """Upsert knowledge records and record the KB version, in one transaction. Idempotent.

    ``embed_shas`` maps record id -> sha256 of its embed text; the vector is
    taken from the embedding cache under ``embedding_model`` (filled before).
    Records without one get no vector (lexical only).
    """
    report = progress or (lambda phase, done, total: None)
    counts: dict[str, int] = {}
    shas = embed_shas or {}
    with psycopg.connect(dsn) as conn:
        with conn.cursor() as cur:
            for n, table in enumerate(TABLES):
                rows = [r for r in records if r.table == table]
                counts[table] = len(rows)
                report(f"loading {table}", n, len(TABLES))
                cur.execute(
                    "create temp table kb_stage (id text, source_file text, payload jsonb, search_text text, "
                    "keys text, code_keys text, embed_sha text) on commit drop"
                )
                with cur.copy(
                    "copy kb_stage (id, source_file, payload, search_text, keys, code_keys, embed_sha) from stdin"
                ) as copy:
                    for r in rows:
                        copy.write_row(
                            (
                                r.id,
                                r.source_file,
                                json.dumps(r.payload, ensure_ascii=False),
                                r.search_text,
                                record_keys(r),
                                record_code_keys(r),
                                shas.get(r.id),
                            )
                        )
                cur.execute(
                    f"""insert into {SCHEMA}.{table} (id, source_file, payload, embedding, search_text, search_tsv, symbol_tsv)
                    select s.id, s.source_file, s.payload, c.embedding, s.search_text,
                           s.keys::tsvector || s.code_keys::tsvector || setweight(to_tsvector('simple', s.search_text), 'D'),
                           s.keys::tsvector
                    from kb_stage s
                    left join {SCHEMA}.embedding_cache c on c.model = %(model)s and c.text_sha256 = s.embed_sha
                    on conflict (id) do update set source_file = excluded.source_file, payload = excluded.payload,
                        embedding = excluded.embedding, search_text = excluded.search_text,
                        search_tsv = excluded.search_tsv, symbol_tsv = excluded.symbol_tsv
                    where ({SCHEMA}.{table}.payload, {SCHEMA}.{table}.search_text, {SCHEMA}.{table}.search_tsv,
                           {SCHEMA}.{table}.symbol_tsv, {SCHEMA}.{table}.embedding::text)
                          is distinct from (excluded.payload, excluded.search_text, excluded.search_tsv, excluded.symbol_tsv,
                           excluded.embedding::text)""",
                    {"model": embedding_model},
                )
                cur.execute(f"delete from {SCHEMA}.{table} t where not exists (select 1 from kb_stage s where s.id = t.id)")
                cur.execute("drop table kb_stage")
                cur.execute(f"delete from {SCHEMA}.kb_lexeme_stats where table_name = %s", (table,))
                cur.execute(
                    f"""insert into {SCHEMA}.kb_lexeme_stats (table_name, lexeme, ndoc)
                    select %s, word, ndoc from ts_stat('select symbol_tsv from {SCHEMA}.{table}')""",
                    (table,),
                )
            cur.execute(
                f"""insert into {SCHEMA}.kb_versions (name, data_version, embedding_model, embedding_dim, record_counts, built_at)
                values ('current', %s, %s, %s, %s, now())
                on conflict (name) do update set data_version = excluded.data_version, embedding_model = excluded.embedding_model,
                  embedding_dim = excluded.embedding_dim, record_counts = excluded.record_counts, built_at = now()""",
                (data_version, embedding_model, embedding_dim, Jsonb(counts)),
            )
        report("analyzing tables", len(TABLES), len(TABLES))
        conn.commit()
        for table in TABLES:
            conn.execute(f"analyze {SCHEMA}.{table}")
        conn.commit()
    return counts


def kb_version_sync(dsn: str) -> KbVersionRow | None:
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return KbVersionRow.from_optional(
            conn.execute(f"select {KbVersionRow.select_list()} from {SCHEMA}.kb_versions where name = 'current'").fetchone()
        )


# ---------------------------------------------------------------- embedding cache (async: query time)


async def get_cached_embedding(conn, model: str, sha: str) -> str | None:
    cur = await conn.execute(
        f"select embedding::text as v from {SCHEMA}.embedding_cache where model = %s and text_sha256 = %s", (model, sha)
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return row["v"] if isinstance(row, dict) else row[0]


async def put_cached_embeddings(conn, model: str, items: Sequence[tuple[str, str]]) -> None:
    """(sha256 of the text, vector literal) pairs in one statement; a text already cached is kept."""
    if not items:
        return
    await conn.execute(
        f"""insert into {SCHEMA}.embedding_cache (model, text_sha256, embedding)
        select %(m)s, i.s, i.v::vector from unnest(%(s)s::text[], %(v)s::text[]) as i(s, v)
        on conflict do nothing""",
        {"m": model, "s": [sha for sha, _ in items], "v": [vector for _, vector in items]},
    )


# ---------------------------------------------------------------- search (async: query time)

# One statement, so the version and the vectors come from one snapshot: the index is labelled with the data it holds.
_VECTORS_SQL = f"""select k.data_version || '/' || k.embedding_model as version, v.table_name, v.id, v.embedding::real[] as embedding
    from {SCHEMA}.dynamic_retrieval_view v, {SCHEMA}.kb_versions k
    where k.name = 'current' and v.embedding is not null order by v.table_name, v.id"""


async def load_vector_index(conn) -> VectorIndex:
    """Every embedded record of the current knowledge base, labelled '<data version>/<embedding model>'
    (an empty index labelled '' when the knowledge base is not built or has no vectors).

    The process's BLAS runs on one thread from here on: a search's matrix-vector
    product takes microseconds, and OpenBLAS's helper threads spin for a while
    after each one, so with searches every few milliseconds one of them held a
    whole core (the retriever's CPU per chunk doubled, measured).
    """
    threadpool_limits(1, user_api="blas")
    cur = await psycopg.AsyncCursor(conn, row_factory=tuple_row).execute(_VECTORS_SQL)
    rows = await cur.fetchall()
    return await asyncio.to_thread(
        VectorIndex.from_rows, rows[0][0] if rows else "", ((table, rid, vector) for _, table, rid, vector in rows)
    )


# One statement, so the version and the records come from one snapshot. The tsvectors travel in their
# text form: parsing it here is faster than unnesting them in the database (measured: 0.4 s for the 40,695 records).
_LEXICAL_SQL = f"""select k.data_version || '/' || k.embedding_model as version, k.record_counts::text as counts,
        v.table_name, v.id, v.title, v.symbol_tsv::text as symbol_tsv, v.search_tsv::text as search_tsv
    from {SCHEMA}.dynamic_retrieval_view v, {SCHEMA}.kb_versions k where k.name = 'current'"""


async def load_lexical_index(conn) -> LexicalIndex:
    """Every record of the current knowledge base for the lexical search, labelled like ``load_vector_index``'s
    (an empty index labelled '' when the knowledge base is not built)."""
    cur = await psycopg.AsyncCursor(conn, row_factory=tuple_row).execute(_LEXICAL_SQL)
    rows = await cur.fetchall()
    if not rows:
        return LexicalIndex("")
    counts = {table: float(n) for table, n in json.loads(rows[0][1] or "{}").items()}
    # About a second of parsing (more while the other services start): in a thread, so the event loop
    # keeps the messages in hand alive (their progress acks) instead of letting JetStream redeliver them.
    return await asyncio.to_thread(
        LexicalIndex.from_rows, rows[0][0], ((t, rid, title, sym, text) for _, _, t, rid, title, sym, text in rows), counts
    )


async def read_details(conn, wanted: Sequence[tuple[str, str]], known: RecordDetails) -> None:
    """Content and metadata of the records ``known`` lacks among ``wanted``, read in one statement and added to it."""
    missing = [w for w in wanted if known.get(w) is None]
    if not missing:
        return
    cur = await conn.execute(
        f"""select d.table_name, d.id, d.content, d.metadata from {SCHEMA}.dynamic_retrieval_view d
            join unnest(%s::text[], %s::text[]) w(t, i) on d.table_name = w.t and d.id = w.i""",
        ([t for t, _ in missing], [i for _, i in missing]),
    )
    for r in await cur.fetchall():
        # Encoded once here: every hit on the record is stored with this text.
        known.put(
            (r["table_name"], r["id"]),
            {"content": r["content"], "metadata": r["metadata"], "metadata_json": encode_metadata(r["metadata"])},
        )


async def search(
    conn,
    query: RetrieverQuery,
    *,
    tables: Sequence[str],
    limit_per_table: int,
    query_embedding: list[float] | None = None,
    vector_index: VectorIndex | None = None,
    lexical_index: LexicalIndex | None = None,
    record_details: RecordDetails | None = None,
    config: SearchConfig = DEFAULT_CONFIG,
) -> list[RetrievalHit]:
    """Hybrid search of the knowledge base with the query alone.

    ``lexical_index`` / ``vector_index``: the knowledge base's records and vectors (``load_lexical_index``,
    ``load_vector_index``), which a caller that searches often holds; a search without them loads them.
    ``record_details``: content and metadata of records already read, for the same knowledge-base version;
    the records it lacks are read and added to it.

    Returns up to ``limit_per_table`` hits per table, grouped by table in the order of ``tables`` (the
    intent's priority), best first within a table, each with its fused score and component scores.
    """
    lexical = lexical_index if lexical_index is not None else await load_lexical_index(conn)
    vectors = vector_index
    if query_embedding is not None and vectors is None:
        vectors = await load_vector_index(conn)
    kept = rank(
        query,
        tables=tables,
        limit_per_table=limit_per_table,
        lexical=lexical,
        vectors=vectors,
        query_embedding=query_embedding,
        config=config,
    )
    known = record_details if record_details is not None else RecordDetails(capacity=max(1, len(kept)))
    await read_details(conn, [(t, row["id"]) for t, _, row, _ in kept], known)
    return hits_of(kept, known)


# ---------------------------------------------------------------- one record against one query ("why not retrieved?")


async def find_records(conn, text: str, *, limit: int = 10) -> list[dict]:
    """Records whose id is ``text``, else whose title contains it (case-insensitive), exact titles first."""
    text = text.strip()
    if not text:
        return []
    view = f"{SCHEMA}.dynamic_retrieval_view"
    cur = await conn.execute(f"select table_name, id, title from {view} where id = %s order by table_name", (text,))
    rows = await cur.fetchall()
    if rows:
        return [dict(r) for r in rows]
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    cur = await conn.execute(
        f"""select table_name, id, title from {view} where title ilike %s
            order by lower(title) = lower(%s) desc, length(title), id limit %s""",
        (pattern, text, limit),
    )
    return [dict(r) for r in await cur.fetchall()]


async def rank_record(
    conn,
    query: RetrieverQuery,
    *,
    table: str,
    record_id: str,
    tables_searched: Sequence[str],
    limit_per_table: int,
    query_embedding: list[float] | None = None,
    vector_index: VectorIndex | None = None,
    lexical_index: LexicalIndex | None = None,
    stored_hit_ids: Sequence[str] = (),
    kb_changed: bool = False,
    config: SearchConfig = DEFAULT_CONFIG,
) -> RankFacts | None:
    """``search.rank_facts`` with the indexes it is not given loaded first (None: no such record)."""
    lexical = lexical_index if lexical_index is not None else await load_lexical_index(conn)
    vectors = vector_index
    if query_embedding is not None and vectors is None:
        vectors = await load_vector_index(conn)
    return rank_facts(
        query,
        table=table,
        record_id=record_id,
        tables_searched=tables_searched,
        limit_per_table=limit_per_table,
        lexical=lexical,
        vectors=vectors,
        query_embedding=query_embedding,
        stored_hit_ids=stored_hit_ids,
        kb_changed=kb_changed,
        config=config,
    )
