"""Knowledge-base tables: loading (build time), the embedding cache, and hybrid search (query time).

Search (``search``) sees a RetrieverQuery and an optional query vector, and
nothing else: no path, chunk id or order can reach it (the signature has no
place for them and RetrieverQuery has no such fields).

One SQL statement gathers, for every table, candidates from two indexes:
- keys: ``symbol_tsv @@ q`` (GIN; exact identifier keys of the records),
  ordered by the idf-weighted key score (``kb_lexeme_stats``);
- vector: the records nearest to the query vector by cosine, found exactly in
  the caller's process (``VectorIndex``, loaded once per knowledge-base
  version by ``load_vector_index``) and handed in by id, when the query has a vector;
and scores every candidate on four components (keys, ts_rank of the full
``search_tsv``, cosine, pg_trgm similarity of the query terms to the title).
They are fused by ``godot_rag.domain.retrieval.fusion.fuse``; a second statement fetches content and
metadata of the hits kept. docs/retrieval.md has the measurements behind the choices.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import psycopg
from psycopg.rows import dict_row, tuple_row
from psycopg.types.json import Jsonb
from threadpoolctl import threadpool_limits

from godot_rag.domain.models import RetrievalHit, RetrieverQuery
from godot_rag.domain.retrieval.fusion import (
    DEFAULT_CONFIG,
    MODE_LEXICAL,
    MODE_VECTOR,
    SearchConfig,
    fuse,
    query_lexemes,
    searches_vectors,
    trigram_terms,
)
from godot_rag.domain.retrieval.knowledge import KnowledgeRecord
from godot_rag.domain.retrieval.vector_index import VectorIndex
from godot_rag.domain.retrieval.why_not import RankFacts, SearchRank
from godot_rag.infra.rows import KbVersionRow

SCHEMA = "godot_rag"
TABLES = ("docs_chunks", "api_mapping", "label_prototypes")


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
            # A build's rows wait in each GIN index's pending list until a vacuum merges them, and every
            # search scans those lists linearly (api_mapping's key lookup: 0.5 ms instead of 0.03, the
            # search a tenth longer, measured): merged now, in bulk. Inserting without the lists
            # (fastupdate off) tripled the build and left slower indexes.
            conn.execute(_MERGE_PENDING_SQL, (f"{SCHEMA}.{table}",))
        conn.commit()
    return counts


_MERGE_PENDING_SQL = """select gin_clean_pending_list(i.indexrelid)
    from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam
    where a.amname = 'gin' and i.indrelid = %s::regclass"""


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

# Weight of a key by its tsvector weight: the record's own symbol (A) over its owner class (B).
KEY_WEIGHT_SQL = "case u.weights[1] when 'A' then 1.0 when 'B' then 0.4 when 'C' then 0.2 else 0.1 end"


def _candidate_sql(tables: Sequence[str], *, lexical: bool, vector: bool) -> str:
    """One statement: the candidates of every table from the key index and/or
    the vector search (ids given as ``vector_ids<n>``, n = the table's place), each candidate scored on every component.

    keys: sum over the query lexemes a record has as keys of idf(lexeme) x key weight;
    text: ts_rank(search_tsv, q) (keys at A/B/C and prose at D);
    trigram: best pg_trgm similarity of a query term to the title. The cosine is added
    by the caller, from the vector index (``with_vector_scores``).
    The key index scan only orders and cuts; the costlier components are
    computed for the kept candidates alone.
    """
    view = f"{SCHEMA}.dynamic_retrieval_view"
    ctes: list[str] = []
    selects: list[str] = []
    for n, table in enumerate(tables):
        assert table in TABLES  # identifiers from the fixed list only, never from input
        q, c = f"q{n}", f"c{n}"
        key_score = (
            f"coalesce((select sum({q}.idf * {KEY_WEIGHT_SQL}) from unnest(v.symbol_tsv) u join {q} on {q}.lexeme = u.lexeme), 0)"
        )
        parts = []
        if lexical:
            # Set-wise: one hash join of every match's keys with the query lexemes,
            # not a sub-select per matching record (460 matches for the worked example's player chunk).
            parts.append(f"""(select v.id from {view} v cross join lateral unnest(v.symbol_tsv) u join {q} on {q}.lexeme = u.lexeme
                where v.table_name = '{table}' and v.symbol_tsv @@ %(tsq)s::tsquery
                group by v.id order by sum({q}.idf * {KEY_WEIGHT_SQL}) desc, v.id limit %(cand)s)""")
        if vector:
            parts.append(f"(select unnest(%(vector_ids{n})s::text[]) as id)")
        ctes.append(f"""{q} as materialized (
                select s.lexeme, ln((k.n + 1.0) / (s.ndoc + 0.5)) as idf
                from {SCHEMA}.kb_lexeme_stats s,
                     (select coalesce((record_counts->>'{table}')::float8, 1) as n from {SCHEMA}.kb_versions where name = 'current') k
                where s.table_name = '{table}' and s.lexeme = any(%(lex)s::text[])),
            {c} as materialized ({" union ".join(parts)})""")
        selects.append(f"""(select '{table}' as table_name, v.id, v.title, {key_score} as key_score,
                case when %(tsq)s = '' then 0 else ts_rank(v.search_tsv, %(tsq)s::tsquery) end as text_score,
                (select coalesce(max(similarity(t, v.title)), 0) from unnest(%(terms)s::text[]) t) as trigram_score
            from {view} v where v.table_name = '{table}' and v.id in (select id from {c}))""")
    return "with " + ",\n".join(ctes) + "\n" + "\nunion all\n".join(selects)


_NAMED_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


def positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """``sql`` with its named placeholders as ``$n`` (one number per name) and the names in number order."""
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        if m.group(0) == "%%":
            return "%"
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    return _NAMED_PLACEHOLDER.sub(number, sql), tuple(names)


@lru_cache(maxsize=64)
def candidate_statement(tables: tuple[str, ...], *, lexical: bool, vector: bool) -> tuple[str, tuple[str, ...]]:
    """The candidate statement of ``_candidate_sql`` in positional form, made once per shape.

    The statement is longer than psycopg caches its own conversion of (4 KB):
    converted here once, it runs through a raw cursor, prepared on the server.
    """
    return positional(_candidate_sql(tables, lexical=lexical, vector=vector))


# Set once per search transaction, in one round trip. The planner prices a
# 50-lexeme OR tsquery and a 384-d distance as cheap and picks sequential scans
# on the smaller tables (api_mapping: 14 ms against 1 ms through the GIN/HNSW
# indexes, measured): keep it on the indexes. The prepared candidate statement
# runs on its generic plan: planning it per query cost about 1.5 ms of the
# search's 9 ms (the plan does not depend on the values: every table is read
# through the same indexes whatever the query).
SEARCH_SETTINGS_SQL = "select set_config('enable_seqscan', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)"
# The same settings for a whole connection, given when it is opened (the store's search pool):
# its searches need neither a transaction nor the settings' round trip (three of five round trips).
SEARCH_SESSION_OPTIONS = "-c enable_seqscan=off -c plan_cache_mode=force_generic_plan"


class RecordDetails:
    """Content and metadata of knowledge records by (table, id), for one knowledge-base version.

    A project's chunks keep finding the same records (the classes its scripts
    use, the renames its Godot 3 code needs): held here, most searches need no
    second statement and no JSON to decode. The entries are shared, never modified.
    """

    def __init__(self, capacity: int = 8192):
        self.capacity = capacity
        self._entries: OrderedDict[tuple[str, str], dict] = OrderedDict()

    def get(self, key: tuple[str, str]) -> dict | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: tuple[str, str], details: dict) -> None:
        self._entries[key] = details
        self._entries.move_to_end(key)
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def with_vector_scores(rows: list[dict], index: VectorIndex | None, query_embedding: Sequence[float] | None) -> list[dict]:
    """Each candidate row with its ``vector_score``: the cosine to the query, None without a vector search
    or for a record without a vector."""
    by_table: dict[str, list[dict]] = {}
    for row in rows:
        by_table.setdefault(row["table_name"], []).append(row)
    for table, found in by_table.items():
        scores = (
            {} if index is None or query_embedding is None else index.similarities(table, [r["id"] for r in found], query_embedding)
        )
        for row in found:
            row["vector_score"] = scores.get(row["id"])
    return rows


def vector_candidates(index: VectorIndex, tables: Sequence[str], query_embedding: Sequence[float], k: int) -> dict[str, list[str]]:
    """The candidate statement's ``vector_ids<n>`` parameters: each table's ``k`` nearest records."""
    return {f"vector_ids{n}": index.nearest(table, query_embedding, k) for n, table in enumerate(tables)}


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
    return VectorIndex.from_rows(rows[0][0] if rows else "", ((table, rid, vector) for _, table, rid, vector in rows))


async def _candidates(
    conn, tables: Sequence[str], *, lexical: bool, vector: bool, params: dict, session_configured: bool = False
) -> list[dict]:
    """The candidate rows of every table, each scored on every component (inside the caller's transaction,
    unless the connection was opened with ``SEARCH_SESSION_OPTIONS``)."""
    if not session_configured:
        await conn.execute(SEARCH_SETTINGS_SQL)
    sql, names = candidate_statement(tuple(tables), lexical=lexical, vector=vector)
    cur = psycopg.AsyncRawCursor(conn, row_factory=dict_row)
    await cur.execute(sql, [params[n] for n in names], prepare=True)
    return list(await cur.fetchall())


async def search(
    conn,
    query: RetrieverQuery,
    *,
    tables: Sequence[str],
    limit_per_table: int,
    query_embedding: list[float] | None = None,
    vector_index: VectorIndex | None = None,
    record_details: RecordDetails | None = None,
    config: SearchConfig = DEFAULT_CONFIG,
    session_configured: bool = False,
) -> list[RetrievalHit]:
    """Hybrid search over dynamic_retrieval_view with the query alone.

    ``vector_index``: the knowledge base's vectors (``load_vector_index``), which a
    caller that searches often holds; without it a search with a vector loads them.
    ``record_details``: content and metadata of records already read, for the same
    knowledge-base version; the records it lacks are read and added to it.
    ``session_configured``: ``conn`` was opened with ``SEARCH_SESSION_OPTIONS`` (no transaction needed);
    otherwise the caller runs the search in a transaction, which the planner settings are local to.

    Returns up to ``limit_per_table`` hits per table, grouped by table in the
    order of ``tables`` (the intent's priority), best first within a table.
    Each hit carries its fused score and the component scores. Two round
    trips: candidates with scores for every table, then content and metadata
    of the hits kept.
    """
    for table in tables:
        if table not in TABLES:
            raise ValueError(f"unknown knowledge table {table!r}")
    lexemes = query_lexemes(query, chunk_identifiers=config.chunk_identifiers) if config.mode != MODE_VECTOR else []
    tsq = tsquery_literal(lexemes)
    use_vector = query_embedding is not None and config.mode != MODE_LEXICAL and searches_vectors(query)
    use_lexical = bool(tsq) and config.mode != MODE_VECTOR
    if not (use_vector or use_lexical) or not tables:
        return []
    cand = max(config.candidates_per_index, limit_per_table)
    params: dict = {"tsq": tsq, "lex": lexemes, "terms": trigram_terms(query), "cand": cand}
    index: VectorIndex | None = None
    if use_vector:
        assert query_embedding is not None
        index = vector_index if vector_index is not None else await load_vector_index(conn)
        params |= vector_candidates(index, tables, query_embedding, cand)
    rows = await _candidates(
        conn, tables, lexical=use_lexical, vector=use_vector, params=params, session_configured=session_configured
    )
    by_table: dict[str, list[dict]] = {}
    for row in with_vector_scores(rows, index, query_embedding if use_vector else None):
        by_table.setdefault(row["table_name"], []).append(row)
    kept = {
        t: fuse(by_table.get(t, []), limit_per_table, with_vector=use_vector, with_lexical=use_lexical, config=config)
        for t in tables
    }
    wanted = [(t, row["id"]) for t in tables for _, row, _ in kept[t]]
    if not wanted:
        return []
    known = record_details if record_details is not None else RecordDetails(capacity=len(wanted))
    missing = [w for w in wanted if known.get(w) is None]
    if missing:
        cur = await conn.execute(
            f"""select d.table_name, d.id, d.content, d.metadata from {SCHEMA}.dynamic_retrieval_view d
                join unnest(%s::text[], %s::text[]) w(t, i) on d.table_name = w.t and d.id = w.i""",
            ([t for t, _ in missing], [i for _, i in missing]),
        )
        for r in await cur.fetchall():
            known.put((r["table_name"], r["id"]), {"content": r["content"], "metadata": r["metadata"]})
    hits: list[RetrievalHit] = []
    for table in tables:
        for score, row, comp in kept[table]:
            d = known.get((table, row["id"])) or {}
            hits.append(
                RetrievalHit(
                    table_name=table,
                    record_id=row["id"],
                    score=round(score, 6),
                    title=row["title"] or "",
                    content=d.get("content") or "",
                    metadata=d.get("metadata") or {},
                    component_scores=comp,
                )
            )
    return hits


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
    stored_hit_ids: Sequence[str] = (),
    kb_changed: bool = False,
    config: SearchConfig = DEFAULT_CONFIG,
) -> RankFacts | None:
    """Where one record stands for a query: its rank in each search over its
    whole table, whether candidate selection kept it, and its fused rank among
    the candidates (the record added when it was not one). None: no such record.

    Runs the same candidate statement as ``search`` (same lexemes, terms,
    vector and cut), so the fused rank is the one the search computes.
    """
    if table not in TABLES:
        raise ValueError(f"unknown knowledge table {table!r}")
    view = f"{SCHEMA}.dynamic_retrieval_view"
    lexemes = query_lexemes(query, chunk_identifiers=config.chunk_identifiers) if config.mode != MODE_VECTOR else []
    tsq = tsquery_literal(lexemes)
    use_vector = query_embedding is not None and config.mode != MODE_LEXICAL and searches_vectors(query)
    use_lexical = bool(tsq) and config.mode != MODE_VECTOR
    vec = None if query_embedding is None else "[" + ",".join(f"{x:.6g}" for x in query_embedding) + "]"
    cand = max(config.candidates_per_index, limit_per_table)
    params = {"tsq": tsq, "lex": lexemes, "vec": vec, "terms": trigram_terms(query), "cand": cand, "rid": record_id}

    cur = await conn.execute(
        f"select id, title, embedding is not null as has_vector from {view} where table_name = '{table}' and id = %(rid)s", params
    )
    record = await cur.fetchone()
    if record is None:
        return None

    candidates: list[dict] = []
    index: VectorIndex | None = None
    if use_vector:
        assert query_embedding is not None
        index = vector_index if vector_index is not None else await load_vector_index(conn)
        params |= vector_candidates(index, [table], query_embedding, cand)
    scored_with = query_embedding if use_vector else None
    if use_vector or use_lexical:
        # The same statement and plan as the search, the same vector candidates and cosines.
        candidates = with_vector_scores(
            await _candidates(conn, [table], lexical=use_lexical, vector=use_vector, params=params), index, scored_with
        )
        await conn.execute("select set_config('enable_seqscan', 'on', true), set_config('plan_cache_mode', 'auto', true)")
    ids = {c["id"] for c in candidates}

    # The record's own components, and its rank in each search over the whole table.
    cur = await conn.execute(
        f"""with q as materialized (
                select s.lexeme, ln((k.n + 1.0) / (s.ndoc + 0.5)) as idf
                from {SCHEMA}.kb_lexeme_stats s,
                     (select coalesce((record_counts->>'{table}')::float8, 1) as n from {SCHEMA}.kb_versions where name = 'current') k
                where s.table_name = '{table}' and s.lexeme = any(%(lex)s::text[])),
            t as (select v.id, v.title, v.symbol_tsv, v.search_tsv, v.embedding from {view} v where v.table_name = '{table}'),
            keyed as (select t.id, sum(q.idf * {KEY_WEIGHT_SQL}) as s from t cross join lateral unnest(t.symbol_tsv) u
                      join q on q.lexeme = u.lexeme where %(tsq)s <> '' and t.symbol_tsv @@ %(tsq)s::tsquery group by t.id),
            texted as (select t.id, ts_rank(t.search_tsv, %(tsq)s::tsquery) as s from t
                       where %(tsq)s <> '' and t.search_tsv @@ %(tsq)s::tsquery),
            vectored as (select t.id, 1 - (t.embedding <=> %(vec)s::vector) as s from t
                         where %(vec)s::vector is not null and t.embedding is not null),
            trigrams as (select t.id, (select coalesce(max(similarity(x, t.title)), 0) from unnest(%(terms)s::text[]) x) as s from t)
        select
          (select s from keyed where id = %(rid)s) as keys_score,
          (select count(*) from keyed a, keyed b where b.id = %(rid)s and (a.s > b.s or (a.s = b.s and a.id < b.id))) + 1 as keys_rank,
          (select count(*) from keyed) as keys_n,
          (select s from texted where id = %(rid)s) as text_score,
          (select count(*) from texted a, texted b where b.id = %(rid)s and (a.s > b.s or (a.s = b.s and a.id < b.id))) + 1 as text_rank,
          (select count(*) from texted) as text_n,
          (select s from vectored where id = %(rid)s) as vector_score,
          (select count(*) from vectored a, vectored b where b.id = %(rid)s and (a.s > b.s or (a.s = b.s and a.id < b.id))) + 1 as vector_rank,
          (select count(*) from vectored) as vector_n,
          (select s from trigrams where id = %(rid)s) as trigram_score,
          (select count(*) from trigrams a, trigrams b where b.id = %(rid)s and b.s > 0 and (a.s > b.s or (a.s = b.s and a.id < b.id))) + 1 as trigram_rank,
          (select count(*) from trigrams where s > 0) as trigram_n""",
        params,
    )
    m = await cur.fetchone()

    def rank(name: str, used: bool) -> SearchRank:
        score = m[f"{name}_score"]
        seen = used and score is not None and (name != "trigram" or float(score) > 0)
        return SearchRank(
            name, None if score is None else float(score), int(m[f"{name}_rank"]) if seen else None, int(m[f"{name}_n"]), used
        )

    ranks = (rank("keys", use_lexical), rank("vector", use_vector), rank("text", use_lexical), rank("trigram", use_lexical))
    by_keys = ranks[0].rank is not None and ranks[0].rank <= cand
    by_vector = ranks[1].rank is not None and ranks[1].rank <= cand

    # Fused rank among the candidates; a record that was not one is scored the
    # same way and added, to say where it would have stood.
    rows = list(candidates)
    if record_id not in ids and (use_vector or use_lexical):
        cur = await conn.execute(
            f"""with q0 as materialized (
                    select s.lexeme, ln((k.n + 1.0) / (s.ndoc + 0.5)) as idf
                    from {SCHEMA}.kb_lexeme_stats s,
                         (select coalesce((record_counts->>'{table}')::float8, 1) as n from {SCHEMA}.kb_versions where name = 'current') k
                    where s.table_name = '{table}' and s.lexeme = any(%(lex)s::text[]))
                select '{table}' as table_name, v.id, v.title,
                  coalesce((select sum(q0.idf * {KEY_WEIGHT_SQL}) from unnest(v.symbol_tsv) u join q0 on q0.lexeme = u.lexeme), 0) as key_score,
                  case when %(tsq)s = '' then 0 else ts_rank(v.search_tsv, %(tsq)s::tsquery) end as text_score,
                  (select coalesce(max(similarity(t, v.title)), 0) from unnest(%(terms)s::text[]) t) as trigram_score
                from {view} v where v.table_name = '{table}' and v.id = %(rid)s""",
            params,
        )
        rows += with_vector_scores([dict(await cur.fetchone())], index, scored_with)
    fused = fuse(rows, len(rows), with_vector=use_vector, with_lexical=use_lexical, config=config) if rows else []
    order = [row["id"] for _, row, _ in fused]
    fused_rank = order.index(record_id) + 1 if record_id in order else None
    fused_score = fused[fused_rank - 1][0] if fused_rank else None
    # The last record the limit keeps among the real candidates (the record itself excluded when it was added).
    real = [s for s, row, _ in fused if row["id"] in ids]
    last_kept = real[min(limit_per_table, len(real)) - 1] if real else None
    stored = list(stored_hit_ids)
    return RankFacts(
        table=table,
        record_id=record_id,
        title=record["title"] or "",
        searched=table in tables_searched,
        tables_searched=tuple(tables_searched),
        ranks=ranks,
        candidates_per_index=cand,
        # The ranks say which search let it in; a candidate that its key rank does
        # not explain came through the vector search (a tie at the cut may rank either way).
        key_candidate=record_id in ids and by_keys,
        vector_candidate=record_id in ids and (by_vector or not by_keys),
        candidate_count=len(rows),
        fused_score=None if fused_score is None else round(fused_score, 6),
        fused_rank=fused_rank,
        limit_per_table=limit_per_table,
        last_kept_score=None if last_kept is None else round(last_kept, 6),
        stored_rank=stored.index(record_id) + 1 if record_id in stored else None,
        kb_changed=kb_changed,
    )
