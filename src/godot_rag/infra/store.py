"""PostgreSQL store: migrations, knowledge search, pipeline state.

Every write is an upsert keyed by a deterministic id, so a redelivered
message rewrites the same row instead of adding one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, cast

import orjson
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb, set_json_dumps
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from godot_rag.domain.judging.rules import declared_names_of
from godot_rag.domain.lru import Lru
from godot_rag.domain.models import RetrievalHit, RetrieverQuery
from godot_rag.domain.redact import redact_credentials
from godot_rag.domain.retrieval import search as kb_search
from godot_rag.domain.retrieval.lexical_index import LexicalIndex
from godot_rag.domain.retrieval.search import RecordDetails, SearchResults
from godot_rag.domain.retrieval.vector_index import VectorIndex
from godot_rag.errors import PoisonError, StoreError
from godot_rag.infra import kb_store
from godot_rag.infra.batching import Coalescer
from godot_rag.infra.hit_lists import HitListSplitter, expand_hits
from godot_rag.infra.metrics import observe_kb_search
from godot_rag.infra.rows import (
    AnalysisRow,
    AnalysisSummary,
    ChunkForRetrieval,
    ChunkOutcomeRow,
    ChunkPlace,
    ChunkResultRow,
    ChunkRow,
    ChunkTaskRow,
    DeadLetterRow,
    FileRow,
    FileTaskInputs,
    FileVersionRow,
    JudgeInputs,
    JudgmentRow,
    JudgmentVersionRow,
    KbRecordMatch,
    KbVersionRow,
    LatestAnalysis,
    Progress,
    ReplayChunkRow,
    ReplayChunkStageRow,
    ReplayRow,
    ResultVersionRow,
    RetrievalRow,
    StageRow,
    StartedReplay,
    VerdictRow,
    WebChunkRow,
    WebFileChunkRow,
    WebTiming,
)

SCHEMA = "godot_rag"
_MIGRATION_LOCK = 0x60D07A6  # advisory lock id: one migrator at a time


def migration_files() -> list[tuple[int, str, str]]:
    folder = resources.files("godot_rag.infra").joinpath("migrations")
    found: list[tuple[int, str, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql"):
            found.append((int(name.split("_", 1)[0]), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate_sync(dsn: str) -> list[str]:
    """Apply pending migrations; returns the names applied now."""
    applied_now: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
        try:
            conn.execute(f"create schema if not exists {SCHEMA}")
            conn.execute(
                f"create table if not exists {SCHEMA}.schema_migrations ("
                "version int primary key, name text not null, applied_at timestamptz not null default now())"
            )
            done = {r[0] for r in conn.execute(f"select version from {SCHEMA}.schema_migrations").fetchall()}
            for version, name, sql in migration_files():
                if version in done:
                    continue
                with conn.transaction():
                    conn.execute(sql)
                    conn.execute(f"insert into {SCHEMA}.schema_migrations (version, name) values (%s, %s)", (version, name))
                applied_now.append(name)
        finally:
            conn.execute("select pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
    return applied_now


log = logging.getLogger(__name__)


def _file_status_params(save: FileChunksSave) -> tuple:
    """The files row's update after a file's chunking (``save_files_chunks``)."""
    output = save.output
    status = "failed" if output.get("status") == "failed" else "chunked"
    return (
        status,
        output.get("status", ""),
        len(output.get("chunks", [])),
        Jsonb(output.get("errors", [])),
        "; ".join(e.get("message", "") for e in output.get("errors", []))[:2000] if status == "failed" else "",
        bool(output.get("reused")),
        save.analysis_id,
        save.source_file,
    )


# A chunking output kept for its content (sha256, kind, producer version); the first one written stays.
_PUT_CHUNKING_CACHE = f"""insert into {SCHEMA}.chunking_cache (sha256, source_kind, producer_version, output)
    values (%s, %s, %s, %s) on conflict do nothing"""


@dataclass
class _KbHeld:
    """What a store keeps for the searches of one knowledge-base version."""

    version: str
    details: RecordDetails
    searches: SearchResults = field(default_factory=SearchResults)
    vectors: VectorIndex | None = None
    lexical: LexicalIndex | None = None


# Lost or refused connections, a server restarting, a full disk, a cancelled
# statement: the database cannot serve now but may later. Constraint and
# syntax errors are not among them (they are bugs or poison, not outages).
_OUTAGE_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)

# Hit lists the judge keeps parsed (``Store.judge_inputs_of``): the distinct lists of a project's direct
# chunks are a few dozen; each name held is sent with every judge read (65 bytes).
HIT_LISTS_HELD = 64
# Hit records the judge keeps parsed (about 1.5 KB each): a project's chunks hit a few thousand.
RECORDS_HELD = 8192
# The names of stored hit records a process remembers (about 100 bytes each), before it forgets them all.
RECORDS_REMEMBERED = 200_000


def _retrieval_versions(where: str = "") -> str:
    """Every retrieval version with its hits: a version row names its hit list (``hit_lists``, one row per
    distinct list, migration 0024); rows written before keep their own hits."""
    return f"""(select v.analysis_id, v.chunk_id, v.version_id, v.retrieval_key, v.kb_version, v.query,
      coalesce(v.hits, {SCHEMA}.expand_hits(l.hits)) as hits, v.hits_sha256, v.created_at
    from {SCHEMA}.retrieval_versions v
    left join {SCHEMA}.hit_lists l on l.sha256 = v.hits_sha256 {where})"""


def _current_retrievals(where: str = "") -> str:
    """Each chunk's current retrieval, with its hits: they are stored once, in the version row the current row
    names (migration 0020) or its hit list; a current row without a version keeps its own."""
    return f"""(select r.analysis_id, r.chunk_id, r.version_id, r.retrieval_key, r.kb_version, r.query,
      coalesce(r.hits, v.hits, {SCHEMA}.expand_hits(l.hits)) as hits, v.hits_sha256, r.created_at
    from {SCHEMA}.retrievals r
    left join {SCHEMA}.retrieval_versions v on v.analysis_id = r.analysis_id and v.chunk_id = r.chunk_id
      and v.version_id = r.version_id
    left join {SCHEMA}.hit_lists l on l.sha256 = v.hits_sha256 {where})"""


RETRIEVAL_VERSIONS = _retrieval_versions()
CURRENT_RETRIEVALS = _current_retrievals()

# Per-row forms, for ``left join lateral ... on true``. Joined to a table's rows by a plain condition instead,
# the planner may compute every row's hits of the analysis once per row: with the statistics of a table that
# has just grown (a new analysis), one Get of 361 chunks took 112 s, expanding 130,000 hit lists. ``offset 0``
# keeps the subquery from being pulled up into that same plan: it runs per row, by the key columns.


def current_retrieval_of(outer: str) -> str:
    """CURRENT_RETRIEVALS of the chunk of row ``outer`` (its analysis_id and chunk_id)."""
    return _current_retrievals(f"where r.analysis_id = {outer}.analysis_id and r.chunk_id = {outer}.chunk_id offset 0")


def retrieval_version_of(outer: str, version_column: str) -> str:
    """RETRIEVAL_VERSIONS of the chunk of row ``outer``, the version its ``version_column`` names."""
    return _retrieval_versions(
        f"where v.analysis_id = {outer}.analysis_id and v.chunk_id = {outer}.chunk_id"
        f" and v.version_id = {outer}.{version_column} offset 0"
    )


@dataclass(frozen=True, slots=True)
class StageClaim:
    """One ``claim_stage`` call."""

    analysis_id: str
    chunk_id: str
    stage: str
    worker: str
    trace_id: str = ""

    def key(self) -> tuple[str, str, str]:
        return (self.analysis_id, self.chunk_id, self.stage)


@dataclass(frozen=True, slots=True)
class StageFinish:
    """One ``finish_stage`` call (error already redacted; next_stage "" for none)."""

    analysis_id: str
    chunk_id: str
    stage: str
    status: str
    error: str = ""
    worker: str = ""
    next_stage: str = ""

    def key(self) -> tuple[str, str, str]:
        return (self.analysis_id, self.chunk_id, self.stage)


@dataclass(frozen=True, slots=True)
class FileTaskAsk:
    """One ``file_task_inputs`` call."""

    analysis_id: str
    source_file: str
    sha256: str
    source_kind: str
    producer_version: str


@dataclass(frozen=True, slots=True)
class FileChunksSave:
    """One ``save_file_chunks`` call."""

    analysis_id: str
    source_file: str
    output: dict
    cache_as: tuple[str, str, str] | None = None

    def key(self) -> tuple[str, str]:
        return (self.analysis_id, self.source_file)


@dataclass(frozen=True, slots=True)
class RetrievalSave:
    """One ``save_retrieval`` call."""

    analysis_id: str
    chunk_id: str
    retrieval_key: str
    kb_version: str
    query: dict
    hits: list[dict]
    version_id: str = ""
    config: dict | None = None
    make_current: bool = True
    replay_id: str = ""

    def key(self) -> tuple[str, str, str]:
        return (self.analysis_id, self.chunk_id, self.version_id)


@dataclass(frozen=True, slots=True)
class JudgmentSave:
    """One ``save_judgment_record`` call, as the parameters of its statement."""

    analysis_id: str
    chunk_id: str
    version_id: str
    params: dict

    def key(self) -> tuple[str, str, str]:
        return (self.analysis_id, self.chunk_id, self.version_id)


class GuardedPool:
    """The connection pool, with database outages raised as StoreError (retryable).

    A stage that meets a StoreError waits for the database (infra/bus.py holds
    its message and retries), instead of counting a failed delivery.
    """

    def __init__(self, pool: AsyncConnectionPool):
        self.raw = pool

    @contextlib.asynccontextmanager
    async def connection(self, timeout: float | None = None) -> AsyncIterator[Any]:
        try:
            async with self.raw.connection(timeout=timeout) as conn:
                yield conn
        except psycopg.errors.ProgramLimitExceeded as exc:
            # An OperationalError by class, but this statement will be refused the same way every
            # time (a tsquery word over 2 KB, an index row too large): retried as an outage, it
            # would hold its message, and with it the stage, for ever.
            raise PoisonError(f"the database refused the statement: {type(exc).__name__}: {exc}".strip()) from exc
        except _OUTAGE_ERRORS as exc:
            raise StoreError(f"database unavailable: {type(exc).__name__}: {exc}".strip()) from exc

    async def close(self) -> None:
        await self.raw.close()


def _json_dumps(value: Any) -> bytes | str:
    """JSON for jsonb parameters: orjson (a 20 KB list of hits in a tenth of json's time), json
    for what orjson refuses (integers past 64 bits), so nothing that stored before fails now."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value)


def use_fast_json() -> None:
    """psycopg's JSON parameters (every connection of this process) are encoded with orjson.

    Reading stays with json: orjson reads an integer past 64 bits as a float, silently.
    """
    set_json_dumps(_json_dumps)


class Store:
    """Async access for the services."""

    def __init__(self, pool: AsyncConnectionPool):
        self.pool = GuardedPool(pool)
        # What searches keep of the knowledge-base version they asked for: its records' keys and text
        # (kb_store.load_lexical_index), its vectors (kb_store.load_vector_index) and the records' content already read.
        self._kb_held: _KbHeld | None = None
        # The hit lists the judge read last, parsed, by name: a project's scene and resource chunks share a
        # few dozen lists, and a statement does not send again the lists named here (``judge_inputs_of``).
        self._hit_lists: Lru[str, list[dict]] = Lru(HIT_LISTS_HELD)
        self._hit_splitter = HitListSplitter()
        # Hit records the judge's reads put lists back together from, by name (shared, never modified).
        self._records_held: Lru[str, dict] = Lru(RECORDS_HELD)
        # The knowledge records this process has stored in hit_records (they are never deleted).
        self._records_stored: set[str] = set()
        self._indexes_lock = asyncio.Lock()
        self._claims: Coalescer[StageClaim, bool] = Coalescer(self.claim_stages, key=StageClaim.key, name="claim_stages")
        self._finishes: Coalescer[StageFinish, None] = Coalescer(self.finish_stages, key=StageFinish.key, name="finish_stages")
        self._embedding_reads: Coalescer[tuple[str, str], list[float] | None] = Coalescer(
            self.get_cached_embeddings, key=lambda ask: ask, share=True, name="embedding_cache"
        )
        self._status_reads: Coalescer[tuple[str, str, tuple[str, ...]], dict[str, str]] = Coalescer(
            self.stage_statuses_of, key=lambda ask: ask, share=True, name="stage_statuses"
        )
        self._file_reads: Coalescer[FileTaskAsk, FileTaskInputs | None] = Coalescer(
            self.file_tasks_inputs, key=lambda ask: ask, share=True, name="file_task_inputs"
        )
        self._file_saves: Coalescer[FileChunksSave, None] = Coalescer(
            self.save_files_chunks, key=FileChunksSave.key, name="save_file_chunks"
        )
        self._declared_reads: Coalescer[tuple[str, str], list[str]] = Coalescer(
            self.files_declared_names, key=lambda ask: ask, share=True, name="declared_names"
        )
        self._chunk_reads: Coalescer[tuple[str, str], ChunkForRetrieval | None] = Coalescer(
            self.chunks_for_retrieval, key=lambda ask: ask, share=True, name="chunks_for_retrieval"
        )
        self._retrieval_reads: Coalescer[str, list[dict] | None] = Coalescer(
            self.stored_hits_of, key=str, share=True, name="stored_retrievals"
        )
        self._retrieval_saves: Coalescer[RetrievalSave, None] = Coalescer(
            self.save_retrievals, key=RetrievalSave.key, name="save_retrievals"
        )
        self._judge_reads: Coalescer[tuple[str, str], JudgeInputs | None] = Coalescer(
            self.judge_inputs_of, key=lambda ask: ask, share=True, name="judge_inputs"
        )
        self._judgment_cache_reads: Coalescer[str, dict | None] = Coalescer(
            self.cached_judgments, key=str, share=True, name="judgment_cache"
        )
        self._judgment_saves: Coalescer[JudgmentSave, None] = Coalescer(
            self.save_judgment_records, key=JudgmentSave.key, name="save_judgments"
        )
        # Asked after each caller's own settlement committed, so one answer serves every caller of a batch.
        self._ready_checks: Coalescer[str, bool] = Coalescer(self.ready_to_finalize, key=str, share=True, name="ready_to_finalize")

    @classmethod
    async def open(cls, dsn: str, *, min_size: int = 1, max_size: int = 4) -> Store:
        # Autocommit: a single statement is its own transaction in one round trip (no BEGIN and
        # COMMIT around it: two of the three round trips of every claim, finish and read).
        # Several statements that must hold together say so with conn.transaction().
        use_fast_json()
        pool = AsyncConnectionPool(
            dsn, min_size=min_size, max_size=max_size, open=False, kwargs={"row_factory": dict_row, "autocommit": True}
        )
        await pool.open(wait=True, timeout=30)
        return cls(pool)

    async def close(self) -> None:
        await self.pool.close()

    async def _fetchone(self, sql: str, params: Sequence[Any] | dict = ()) -> dict | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return cast("dict | None", await cur.fetchone())

    async def _fetchall(self, sql: str, params: Sequence[Any] | dict = ()) -> list[dict]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return cast("list[dict]", await cur.fetchall())

    # ------------------------------------------------------------ analyses & files

    async def create_analysis(
        self,
        *,
        analysis_id: str,
        project_id: str,
        prompt: str,
        source_origin: str,
        input_ref: str,
        pipeline_version: str,
        files: list[dict],
        project_symbols: str = "",
        symbols_version: str = "",
        symbol_scopes: dict[str, str] | None = None,
    ) -> bool:
        """Insert the analysis and its file list; False when it already existed (a resubmission).

        ``project_symbols`` is the project index (JSON) and ``symbol_scopes`` each
        script's slice of it (source_file -> JSON), stored with the files.
        """
        scopes = symbol_scopes or {}
        async with self.pool.connection() as conn:
            async with conn.transaction():
                cur = await conn.execute(
                    f"""insert into {SCHEMA}.analyses (analysis_id, project_id, prompt, source_origin, input_ref, pipeline_version,
                        files_total, files_included)
                    values (%s, %s, %s, %s, %s, %s, %s, %s) on conflict (analysis_id) do nothing returning analysis_id""",
                    (
                        analysis_id,
                        project_id,
                        prompt,
                        source_origin,
                        input_ref,
                        pipeline_version,
                        len(files),
                        sum(1 for f in files if f["included"]),
                    ),
                )
                created = await cur.fetchone() is not None
                if not created:
                    return False
                async with conn.cursor() as c2:
                    for f in files:
                        # Files given without their bytes had them stored beforehand (put_blobs).
                        if f["included"] and "data" in f:
                            await c2.execute(
                                f"insert into {SCHEMA}.blobs (sha256, data, size) values (%s, %s, %s) on conflict do nothing",
                                (f["sha256"], f["data"], len(f["data"])),
                            )
                    await c2.executemany(
                        f"""insert into {SCHEMA}.files (analysis_id, source_file, file_order, source_kind, included, excluded_reason,
                            sha256, size, status, symbol_scope)
                        values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) on conflict do nothing""",
                        [
                            (
                                analysis_id,
                                f["source_file"],
                                i + 1,
                                f["source_kind"],
                                f["included"],
                                f["excluded_reason"],
                                f["sha256"],
                                f["size"],
                                "queued" if f["included"] else "excluded",
                                scopes.get(f["source_file"], ""),
                            )
                            for i, f in enumerate(files)
                        ],
                    )
                    if project_symbols:
                        await c2.execute(
                            f"""insert into {SCHEMA}.project_symbols (analysis_id, version, symbols) values (%s, %s, %s::jsonb)
                            on conflict (analysis_id) do update set version = excluded.version, symbols = excluded.symbols""",
                            (analysis_id, symbols_version, project_symbols),
                        )
                return True

    async def count_analyses_by_status(self) -> dict[str, int]:
        rows = await self._fetchall(f"select status, count(*) as n from {SCHEMA}.analyses group by status")
        return {str(r["status"]): int(r["n"]) for r in rows}

    async def get_analysis(self, analysis_id: str) -> AnalysisRow | None:
        return AnalysisRow.from_optional(
            await self._fetchone(
                f"select {AnalysisRow.select_list()} from {SCHEMA}.analyses where analysis_id = %s", (analysis_id,)
            )
        )

    async def list_files(self, analysis_id: str) -> list[FileRow]:
        return FileRow.from_rows(
            await self._fetchall(
                f"select {FileRow.select_list()} from {SCHEMA}.files where analysis_id = %s order by file_order", (analysis_id,)
            )
        )

    async def get_file(self, analysis_id: str, source_file: str) -> FileRow | None:
        return FileRow.from_optional(
            await self._fetchone(
                f"select {FileRow.select_list()} from {SCHEMA}.files where analysis_id = %s and source_file = %s",
                (analysis_id, source_file),
            )
        )

    async def file_task_inputs(
        self, analysis_id: str, source_file: str, sha256: str, source_kind: str, version: str
    ) -> FileTaskInputs | None:
        """A file task's reads (None: no such file): its row, the chunking cached for its content when it was
        made for this path (chunk ids start with the path), and its content only when no such chunking is
        cached. Reads made at the same time are one statement (``file_tasks_inputs``)."""
        return await self._file_reads(FileTaskAsk(analysis_id, source_file, sha256, source_kind, version))

    async def file_tasks_inputs(self, asks: Sequence[FileTaskAsk]) -> list[FileTaskInputs | None]:
        """``file_task_inputs`` of many file tasks in one statement."""
        rows = await self._fetchall(
            f"""select i.n, {FileRow.select_list("f")}, c.output as cached_output,
                  case when c.output is null or c.output->>'source_file' is distinct from f.source_file
                       then (select b.data from {SCHEMA}.blobs b where b.sha256 = i.sha) end as blob
                from unnest(%(a)s::text[], %(p)s::text[], %(sha)s::text[], %(kind)s::text[], %(version)s::text[])
                  with ordinality as i(a, p, sha, kind, version, n)
                join {SCHEMA}.files f on f.analysis_id = i.a and f.source_file = i.p
                left join {SCHEMA}.chunking_cache c on c.sha256 = i.sha and c.source_kind = i.kind
                  and c.producer_version = i.version""",
            {
                "a": [x.analysis_id for x in asks],
                "p": [x.source_file for x in asks],
                "sha": [x.sha256 for x in asks],
                "kind": [x.source_kind for x in asks],
                "version": [x.producer_version for x in asks],
            },
        )
        found: list[FileTaskInputs | None] = [None] * len(asks)
        for row in rows:
            n = row.pop("n")
            cached, blob = row.pop("cached_output"), row.pop("blob")
            path = asks[n - 1].source_file
            found[n - 1] = FileTaskInputs(
                FileRow.from_row(row),
                cached if cached is not None and cached.get("source_file") == path else None,
                None if blob is None else bytes(blob),
            )
        return found

    async def get_project_symbols(self, analysis_id: str) -> str:
        """The project index stored with an analysis (JSON text; "" when none was stored)."""
        row = await self._fetchone(
            f"select symbols::text as symbols from {SCHEMA}.project_symbols where analysis_id = %s", (analysis_id,)
        )
        return "" if row is None else str(row["symbols"])

    async def put_blobs(self, blobs: list[tuple[str, bytes]]) -> None:
        """File contents by sha256 (a submission stores them batch by batch before its analysis row)."""
        if not blobs:
            return
        async with self.pool.connection() as conn:
            async with conn.cursor() as cur:
                await cur.executemany(
                    f"insert into {SCHEMA}.blobs (sha256, data, size) values (%s, %s, %s) on conflict do nothing",
                    [(sha, data, len(data)) for sha, data in blobs],
                )

    async def get_blob(self, sha256: str) -> bytes | None:
        row = await self._fetchone(f"select data from {SCHEMA}.blobs where sha256 = %s", (sha256,))
        return None if row is None else bytes(row["data"])

    async def fail_file(self, analysis_id: str, source_file: str, error: str) -> None:
        """The file failed; so did any of its chunks not settled yet (committed, maybe never handed on)."""
        async with self.pool.connection() as conn:
            async with conn.transaction():
                await conn.execute(
                    f"update {SCHEMA}.files set status = 'failed', error = %s, updated_at = now() where analysis_id = %s and source_file = %s",
                    (redact_credentials(error), analysis_id, source_file),
                )
                await conn.execute(
                    f"""update {SCHEMA}.chunk_stages s set status = 'failed', last_error = %s, updated_at = now()
                    from {SCHEMA}.chunks c where c.analysis_id = s.analysis_id and c.chunk_id = s.chunk_id
                      and s.analysis_id = %s and c.source_file = %s and s.status not in ('done', 'failed')""",
                    (redact_credentials(error), analysis_id, source_file),
                )

    # ------------------------------------------------------------ chunking

    async def put_chunking_cache(self, sha256: str, source_kind: str, version: str, output: dict) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(_PUT_CHUNKING_CACHE, (sha256, source_kind, version, Jsonb(output)))

    async def save_file_chunks(
        self, analysis_id: str, source_file: str, output: dict, *, cache_as: tuple[str, str, str] | None = None
    ) -> None:
        """Chunks of one file + their first stage rows + the file status, in one transaction; with ``cache_as``
        ((sha256, source kind, producer version)), the output also goes into the chunking reuse cache. Saves
        made at the same time commit together (``save_files_chunks``)."""
        await self._file_saves(FileChunksSave(analysis_id, source_file, output, cache_as))

    async def save_files_chunks(self, saves: Sequence[FileChunksSave]) -> list[None]:
        """``save_file_chunks`` of many files in one transaction: one commit, and each statement sent once
        for all the files' rows (a project of many small files made a transaction per file)."""
        # Sorted and once per key: two processes that cache the same content take its row lock in one order.
        caches = {x.cache_as: x.output for x in saves if x.cache_as is not None}
        async with self.pool.connection() as conn:
            async with conn.transaction():
                async with conn.cursor() as cur:
                    if caches:
                        await cur.executemany(_PUT_CHUNKING_CACHE, [(*key, Jsonb(caches[key])) for key in sorted(caches)])
                    await cur.executemany(
                        f"""insert into {SCHEMA}.chunks (analysis_id, chunk_id, source_file, chunk_order, chunk_kind, start_line, end_line, chunk)
                        values (%s, %s, %s, %s, %s, %s, %s, %s)
                        on conflict (analysis_id, chunk_id) do update set chunk = excluded.chunk, chunk_order = excluded.chunk_order,
                          start_line = excluded.start_line, end_line = excluded.end_line""",
                        [
                            (
                                x.analysis_id,
                                c["chunk_id"],
                                x.source_file,
                                c["chunk_order"],
                                c["chunk_kind"],
                                c["span"]["start_line"],
                                c["span"]["end_line"],
                                Jsonb(c),
                            )
                            for x in saves
                            for c in x.output.get("chunks", [])
                        ],
                    )
                    # The 'aggregate' row exists from the start so that completion is
                    # "no unsettled aggregate row left" (see finalize_if_complete).
                    await cur.executemany(
                        f"""insert into {SCHEMA}.chunk_stages (analysis_id, chunk_id, stage, status) values (%s, %s, %s, 'waiting')
                        on conflict do nothing""",
                        [
                            (x.analysis_id, c["chunk_id"], stage)
                            for x in saves
                            for c in x.output.get("chunks", [])
                            for stage in ("retrieve", "aggregate")
                        ],
                    )
                    await cur.executemany(
                        f"""update {SCHEMA}.files set status = %s, parse_status = %s, chunk_count = %s, errors = %s, error = %s,
                            chunks_reused = %s, updated_at = now() where analysis_id = %s and source_file = %s""",
                        [_file_status_params(x) for x in saves],
                    )
        return [None] * len(saves)

    async def get_chunk(self, analysis_id: str, chunk_id: str) -> ChunkRow | None:
        return ChunkRow.from_optional(
            await self._fetchone(
                f"select {ChunkRow.select_list()} from {SCHEMA}.chunks where analysis_id = %s and chunk_id = %s",
                (analysis_id, chunk_id),
            )
        )

    async def file_symbol_scope(self, analysis_id: str, source_file: str) -> str:
        """The file's slice of the project index (JSON; "" when none was computed)."""
        row = await self._fetchone(
            f"select symbol_scope from {SCHEMA}.files where analysis_id = %s and source_file = %s", (analysis_id, source_file)
        )
        return row["symbol_scope"] if row else ""

    async def chunk_for_retrieval(self, analysis_id: str, chunk_id: str) -> ChunkForRetrieval | None:
        """A chunk and its file's hash (None: no such chunk); reads made at the same time are one statement."""
        return await self._chunk_reads((analysis_id, chunk_id))

    async def chunks_for_retrieval(self, asks: Sequence[tuple[str, str]]) -> list[ChunkForRetrieval | None]:
        """``chunk_for_retrieval`` of many (analysis, chunk) pairs in one statement."""
        rows = await self._fetchall(
            f"""select i.n, c.chunk_order, c.source_file, c.chunk, f.sha256 as file_sha256
            from unnest(%(a)s::text[], %(c)s::text[]) with ordinality as i(a, c, n)
            join {SCHEMA}.chunks c on c.analysis_id = i.a and c.chunk_id = i.c
            left join {SCHEMA}.files f on f.analysis_id = c.analysis_id and f.source_file = c.source_file""",
            {"a": [a for a, _ in asks], "c": [c for _, c in asks]},
        )
        found: list[ChunkForRetrieval | None] = [None] * len(asks)
        for r in rows:
            n = r.pop("n")
            found[n - 1] = ChunkForRetrieval.from_row(r)
        return found

    async def judge_inputs(self, analysis_id: str, chunk_id: str) -> JudgeInputs | None:
        """What the judge needs of one chunk: the chunk, its file's kind and slice of the project index, its
        retrieval, the prompt. Reads made at the same time are one statement (``judge_inputs_of``)."""
        return await self._judge_reads((analysis_id, chunk_id))

    async def judge_inputs_of(self, asks: Sequence[tuple[str, str]]) -> list[JudgeInputs | None]:
        """``judge_inputs`` of many (analysis, chunk) pairs in one statement.

        A stored list comes as its entries (about 2 KB), put back together here from the records this
        process holds (the ones it lacks: one more statement); a list already in hand is not sent at all.
        """
        # The lists in hand when the statement is sent: it leaves them out of its rows.
        held = dict(self._hit_lists.items())
        rows = await self._fetchall(
            f"""select i.n, c.chunk, c.source_file, f.source_kind, f.symbol_scope, r.query, v.hits_sha256,
              case when v.hits_sha256 = any(%(held)s::text[]) then null else l.hits::text end as entries_json,
              coalesce(r.hits, v.hits)::text as hits_json,
              r.version_id as retrieval_version, a.prompt, a.project_id, a.current_judgment_version
            from unnest(%(a)s::text[], %(c)s::text[]) with ordinality as i(a, c, n)
            join {SCHEMA}.chunks c on c.analysis_id = i.a and c.chunk_id = i.c
            join {SCHEMA}.analyses a on a.analysis_id = c.analysis_id
            left join {SCHEMA}.files f on f.analysis_id = c.analysis_id and f.source_file = c.source_file
            left join {SCHEMA}.retrievals r on r.analysis_id = c.analysis_id and r.chunk_id = c.chunk_id
            left join {SCHEMA}.retrieval_versions v on v.analysis_id = r.analysis_id and v.chunk_id = r.chunk_id
              and v.version_id = r.version_id
            left join {SCHEMA}.hit_lists l on l.sha256 = v.hits_sha256""",
            {"a": [a for a, _ in asks], "c": [c for _, c in asks], "held": list(held)},
        )
        # The hits are knowledge-base records and scores, written by hit_to_dict (no integer past
        # 64 bits, which orjson would read as a float): parsed at a quarter of json's cost.
        entries = {r["hits_sha256"]: orjson.loads(r["entries_json"]) for r in rows if r["entries_json"] is not None}
        await self._hold_records({e["r"] for listed in entries.values() for e in listed})
        found: list[JudgeInputs | None] = [None] * len(asks)
        for r in rows:
            n = r.pop("n")
            listed_json, hits_json, sha = r.pop("entries_json"), r.pop("hits_json"), r.get("hits_sha256")
            if hits_json is not None:  # stored with its own hits (before migration 0024, or without a version)
                r["hits"], r["hits_sha256"] = orjson.loads(hits_json), None
            elif sha is None:  # no retrieval yet
                r["hits"] = None
            elif listed_json is None and sha in held:
                r["hits"] = held[sha]
                self._hit_lists.put(sha, held[sha])
            elif sha in entries:
                r["hits"] = self._hit_lists.get(sha) or expand_hits(entries[sha], self._records_held)
                self._hit_lists.put(sha, r["hits"])
            else:  # a list that is not stored: the judge refuses the chunk as one without a retrieval
                r["hits"] = None
            found[n - 1] = JudgeInputs.from_row(r)
        return found

    async def _hold_records(self, names: set[str]) -> None:
        """The hit records named, in ``_records_held``: those not held are read in one statement."""
        missing = [name for name in names if self._records_held.get(name) is None]
        if not missing:
            return
        rows = await self._fetchall(f"select sha256, hit::text as hit from {SCHEMA}.hit_records where sha256 = any(%s)", (missing,))
        for row in rows:
            self._records_held.put(row["sha256"], orjson.loads(row["hit"]))

    async def file_declared_names(self, analysis_id: str, source_file: str) -> list[str]:
        """The names a file's chunks declare; reads made at the same time are one statement, and the chunks
        of one file judged together ask once (``files_declared_names``)."""
        return await self._declared_reads((analysis_id, source_file))

    async def files_declared_names(self, asks: Sequence[tuple[str, str]]) -> list[list[str]]:
        """``file_declared_names`` of many (analysis, file) pairs in one statement; only the chunks that
        declare names are read (a shader's blocks with a uniform), and only declarations' text."""
        rows = await self._fetchall(
            f"""select i.n, c.chunk_kind as kind, c.chunk->>'name' as name,
                  case when c.chunk_kind <> 'function' then c.chunk->>'code_text' end as text
            from unnest(%(a)s::text[], %(f)s::text[]) with ordinality as i(a, f, n)
            join {SCHEMA}.chunks c on c.analysis_id = i.a and c.source_file = i.f
            where c.chunk_kind in ('function', 'variable', 'const', 'signal')
               or (c.chunk_kind = 'block' and strpos(c.chunk->>'code_text', 'uniform') > 0)""",
            {"a": [a for a, _ in asks], "f": [f for _, f in asks]},
        )
        per_file: list[list[tuple[str, str, str]]] = [[] for _ in asks]
        for r in rows:
            per_file[r["n"] - 1].append((r["kind"] or "", r["name"] or "", r["text"] or ""))
        return [sorted(declared_names_of(chunks)) for chunks in per_file]

    # ------------------------------------------------------------ stages

    async def stage_status(self, analysis_id: str, chunk_id: str, stage: str) -> str | None:
        row = await self._fetchone(
            f"select status from {SCHEMA}.chunk_stages where analysis_id = %s and chunk_id = %s and stage = %s",
            (analysis_id, chunk_id, stage),
        )
        return None if row is None else row["status"]

    async def mark_stage(
        self,
        analysis_id: str,
        chunk_id: str,
        stage: str,
        status: str,
        *,
        error: str = "",
        worker: str = "",
        trace_id: str = "",
        count_attempt: bool = False,
    ) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                f"""insert into {SCHEMA}.chunk_stages (analysis_id, chunk_id, stage, status, attempts, last_error, worker, trace_id, started_at)
                values (%(a)s, %(c)s, %(s)s, %(st)s, %(inc)s, %(e)s, %(w)s, %(t)s, case when %(st)s = 'in_progress' then now() end)
                on conflict (analysis_id, chunk_id, stage) do update set
                  status = case when {SCHEMA}.chunk_stages.status = 'done' and %(st)s <> 'done' then 'done' else %(st)s end,
                  attempts = {SCHEMA}.chunk_stages.attempts + %(inc)s,
                  last_error = case when %(e)s <> '' then %(e)s else {SCHEMA}.chunk_stages.last_error end,
                  worker = %(w)s, trace_id = case when %(t)s <> '' then %(t)s else {SCHEMA}.chunk_stages.trace_id end,
                  started_at = case when %(st)s = 'in_progress' then now() else {SCHEMA}.chunk_stages.started_at end,
                  updated_at = now()""",
                {
                    "a": analysis_id,
                    "c": chunk_id,
                    "s": stage,
                    "st": status,
                    "e": redact_credentials(error),
                    "w": worker,
                    "t": trace_id,
                    "inc": 1 if count_attempt else 0,
                },
            )

    async def stage_statuses(self, analysis_id: str, chunk_id: str, stages: Sequence[str]) -> dict[str, str]:
        """The status of each of ``stages`` recorded for the chunk (reads made at the same time are one statement)."""
        return await self._status_reads((analysis_id, chunk_id, tuple(stages)))

    async def stage_statuses_of(self, asks: Sequence[tuple[str, str, tuple[str, ...]]]) -> list[dict[str, str]]:
        """``stage_statuses`` for many (analysis, chunk, stages) in one statement."""
        rows = await self._fetchall(
            f"""select i.n, s.stage, s.status
            from unnest(%(a)s::text[], %(c)s::text[]) with ordinality as i(a, c, n)
            join {SCHEMA}.chunk_stages s on s.analysis_id = i.a and s.chunk_id = i.c
            where s.stage = any(%(stages)s::text[])""",
            {
                "a": [a for a, _, _ in asks],
                "c": [c for _, c, _ in asks],
                "stages": sorted({st for _, _, sts in asks for st in sts}),
            },
        )
        found: list[dict[str, str]] = [{} for _ in asks]
        for r in rows:
            n = r["n"] - 1
            if r["stage"] in asks[n][2]:
                found[n][r["stage"]] = r["status"]
        return found

    async def claim_stage(self, analysis_id: str, chunk_id: str, stage: str, *, worker: str, trace_id: str = "") -> bool:
        """Mark the stage in progress (one more attempt) unless it is already settled; True when claimed.

        Done and failed are final for an analysis: a redelivery of a settled
        chunk claims nothing and is only handed on. Claims made at the same time
        by this process's handlers go to the database as one statement.
        """
        return await self._claims(StageClaim(analysis_id, chunk_id, stage, worker, trace_id))

    async def claim_stages(self, claims: Sequence[StageClaim]) -> list[bool]:
        """``claim_stage`` for many chunk stages in one statement (distinct keys); whether each was claimed."""
        rows = await self._fetchall(
            f"""insert into {SCHEMA}.chunk_stages as t (analysis_id, chunk_id, stage, status, attempts, worker, trace_id, started_at)
                select i.a, i.c, i.s, 'in_progress', 1, i.w, i.t, now()
                from unnest(%(a)s::text[], %(c)s::text[], %(s)s::text[], %(w)s::text[], %(t)s::text[]) as i(a, c, s, w, t)
                on conflict (analysis_id, chunk_id, stage) do update set status = 'in_progress',
                  attempts = t.attempts + 1, worker = excluded.worker,
                  trace_id = case when excluded.trace_id <> '' then excluded.trace_id else t.trace_id end,
                  started_at = now(), updated_at = now()
                where t.status not in ('done', 'failed')
                returning t.analysis_id, t.chunk_id, t.stage""",
            {
                "a": [c.analysis_id for c in claims],
                "c": [c.chunk_id for c in claims],
                "s": [c.stage for c in claims],
                "w": [c.worker for c in claims],
                "t": [c.trace_id for c in claims],
            },
        )
        won = {(r["analysis_id"], r["chunk_id"], r["stage"]) for r in rows}
        return [c.key() in won for c in claims]

    async def finish_stage(
        self,
        analysis_id: str,
        chunk_id: str,
        stage: str,
        status: str,
        *,
        error: str = "",
        worker: str = "",
        next_stage: str | None = None,
    ) -> None:
        """Settle the stage (done or failed) and, in the same statement, mark the next stage waiting.

        Settlements made at the same time by this process's handlers go to the database as one statement.
        """
        await self._finishes(StageFinish(analysis_id, chunk_id, stage, status, redact_credentials(error), worker, next_stage or ""))

    async def finish_stages(self, finishes: Sequence[StageFinish]) -> list[None]:
        """``finish_stage`` for many chunk stages in one statement (distinct keys)."""
        await self._execute_returning(
            f"""/* finish_stages */ with i as (
                select * from unnest(%(a)s::text[], %(c)s::text[], %(s)s::text[], %(st)s::text[], %(e)s::text[],
                                     %(w)s::text[], %(n)s::text[]) as i(a, c, s, st, e, w, n)),
            settled as (
                update {SCHEMA}.chunk_stages t set
                  status = case when t.status = 'done' then 'done' else i.st end,
                  last_error = case when i.e <> '' then i.e else t.last_error end,
                  worker = case when i.w <> '' then i.w else t.worker end, updated_at = now()
                from i where t.analysis_id = i.a and t.chunk_id = i.c and t.stage = i.s
                returning t.analysis_id, t.chunk_id, t.stage)
            insert into {SCHEMA}.chunk_stages (analysis_id, chunk_id, stage, status)
            select i.a, i.c, i.n, 'waiting' from i
            join settled on settled.analysis_id = i.a and settled.chunk_id = i.c and settled.stage = i.s
            where i.n <> ''
            on conflict do nothing""",
            {
                "a": [f.analysis_id for f in finishes],
                "c": [f.chunk_id for f in finishes],
                "s": [f.stage for f in finishes],
                "st": [f.status for f in finishes],
                "e": [f.error for f in finishes],
                "w": [f.worker for f in finishes],
                "n": [f.next_stage for f in finishes],
            },
        )
        return [None] * len(finishes)

    async def _execute_returning(self, sql: str, params: Sequence[Any] | dict = ()) -> dict | None:
        """One statement in its own committed transaction; its first row, if any."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return cast("dict | None", await cur.fetchone()) if cur.description else None

    # ------------------------------------------------------------ retrieval

    async def get_cached_embedding(self, model: str, sha: str) -> list[float] | None:
        """The cached vector of a text (by its sha256) for ``model``; lookups made at the same time are one statement."""
        return await self._embedding_reads((model, sha))

    async def get_cached_embeddings(self, asks: Sequence[tuple[str, str]]) -> list[list[float] | None]:
        """``get_cached_embedding`` for many (model, sha256) pairs in one statement."""
        rows = await self._fetchall(
            f"""select i.n, c.embedding::text as v
            from unnest(%(m)s::text[], %(s)s::text[]) with ordinality as i(m, s, n)
            join {SCHEMA}.embedding_cache c on c.model = i.m and c.text_sha256 = i.s""",
            {"m": [m for m, _ in asks], "s": [s for _, s in asks]},
        )
        found: list[list[float] | None] = [None] * len(asks)
        for r in rows:
            found[r["n"] - 1] = [float(x) for x in r["v"].strip("[]").split(",")]
        return found

    async def put_cached_embeddings(self, model: str, items: Sequence[tuple[str, str]]) -> None:
        """(sha256 of the text, vector literal) pairs, in one statement."""
        async with self.pool.connection() as conn:
            await kb_store.put_cached_embeddings(conn, model, items)

    async def kb_version(self) -> KbVersionRow | None:
        return KbVersionRow.from_optional(
            await self._fetchone(f"select {KbVersionRow.select_list()} from {SCHEMA}.kb_versions where name = 'current'")
        )

    def _held_for(self, kb_version: str) -> _KbHeld:
        """What is kept for searches of ``kb_version`` ('<data version>/<mode>'): a search that names
        another version starts afresh (a rebuilt knowledge base is never mixed with the last one)."""
        if self._kb_held is None or self._kb_held.version != kb_version:
            self._kb_held = _KbHeld(kb_version, RecordDetails())
        return self._kb_held

    async def vector_index(self, kb_version: str) -> VectorIndex:
        """The knowledge base's vectors for searches of ``kb_version`` ('<data version>/<embedding model>'),
        loaded on the first search of a version and held (6 MB for the shipped knowledge base)."""
        held = self._held_for(kb_version)
        if held.vectors is None:
            async with self._indexes_lock:
                if held.vectors is None:
                    started = time.perf_counter()
                    async with self.pool.connection() as conn:
                        index = await kb_store.load_vector_index(conn)
                    log.info(
                        "knowledge-base vectors loaded: %d in %.2fs (%s)", len(index), time.perf_counter() - started, index.version
                    )
                    # Held under the version asked for: a search that still names the previous version
                    # (a rebuild in between) does not load them again; the next version asked for does.
                    held.vectors = index
        return held.vectors

    async def lexical_index(self, kb_version: str) -> LexicalIndex:
        """The knowledge base's records for the lexical search of ``kb_version``, loaded on the first search of a
        version and held (about 1 s and 60 MB for the shipped knowledge base's 40,695 records)."""
        held = self._held_for(kb_version)
        if held.lexical is None:
            async with self._indexes_lock:
                if held.lexical is None:
                    started = time.perf_counter()
                    async with self.pool.connection() as conn:
                        index = await kb_store.load_lexical_index(conn)
                    log.info(
                        "knowledge-base records loaded: %d in %.2fs (%s)", len(index), time.perf_counter() - started, index.version
                    )
                    held.lexical = index
        return held.lexical

    async def search(
        self,
        query: RetrieverQuery,
        *,
        tables: Sequence[str],
        limit_per_table: int,
        query_embedding: list[float] | None = None,
        kb_version: str = "",
    ) -> list[RetrievalHit]:
        """``kb_version``: the knowledge base the search is for ('<data version>/<mode>'): its indexes and the
        records' content are kept between searches. Without it nothing is kept (each search loads afresh).

        The search runs here, over the indexes; the database is asked only for the content of hits not read before.
        """
        started = time.perf_counter()
        if not kb_version:
            async with self.pool.connection() as conn:
                hits = await kb_store.search(
                    conn, query, tables=tables, limit_per_table=limit_per_table, query_embedding=query_embedding
                )
            observe_kb_search(time.perf_counter() - started)
            return hits
        held = self._held_for(kb_version)
        search = kb_search.Search.of(query, tables=tables, limit_per_table=limit_per_table, query_embedding=query_embedding)
        # Only searches without a vector are kept: those of direct chunks, which repeat their keys with other
        # values. A vector comes from a script chunk's whole text, and a repeated one is the same query, which
        # the retriever's cache of whole queries answers before asking here; keeping them cost 40 MB for nothing.
        keep = not search.use_vector
        found = held.searches.get(search) if keep else None
        if found is not None:
            observe_kb_search(time.perf_counter() - started, reused=True)
            return found
        lexical = await self.lexical_index(kb_version)
        vectors = await self.vector_index(kb_version) if search.use_vector else None
        kept = search.rank(lexical, vectors)
        wanted = [(table, row["id"]) for table, _, row, _ in kept]
        if any(held.details.get(w) is None for w in wanted):
            async with self.pool.connection() as conn:
                await kb_store.read_details(conn, wanted, held.details)
        hits = kb_search.hits_of(kept, held.details)
        if keep:
            held.searches.put(search, hits)
        observe_kb_search(time.perf_counter() - started)
        return hits

    async def stored_hits(self, retrieval_key: str) -> list[dict] | None:
        """The hits of a retrieval stored under this reuse key by any analysis (None: none is);
        lookups made at the same time are one statement."""
        return await self._retrieval_reads(retrieval_key)

    async def stored_hits_of(self, keys: Sequence[str]) -> list[list[dict] | None]:
        # One stored retrieval per key (any will do: equal keys, equal hits), then its list: put back
        # together here from the records held, as the judge's reads do.
        rows = await self._fetchall(
            f"""select k.retrieval_key, k.hits_sha256, l.hits::text as entries_json, k.hits::text as hits_json
            from (select distinct on (retrieval_key) retrieval_key, hits, hits_sha256 from {SCHEMA}.retrieval_versions
                  where retrieval_key = any(%s) order by retrieval_key) k
            left join {SCHEMA}.hit_lists l on l.sha256 = k.hits_sha256""",
            (list(keys),),
        )
        entries = {r["hits_sha256"]: orjson.loads(r["entries_json"]) for r in rows if r["entries_json"] is not None}
        await self._hold_records({e["r"] for listed in entries.values() for e in listed})
        by_key: dict[str, list[dict]] = {}
        for r in rows:
            if r["hits_json"] is not None:
                by_key[r["retrieval_key"]] = orjson.loads(r["hits_json"])
            elif r["hits_sha256"] in entries:
                by_key[r["retrieval_key"]] = expand_hits(entries[r["hits_sha256"]], self._records_held)
        return [by_key.get(k) for k in keys]

    async def save_retrieval(
        self,
        analysis_id: str,
        chunk_id: str,
        *,
        retrieval_key: str,
        kb_version: str,
        query: dict,
        hits: list[dict],
        version_id: str = "",
        config: dict | None = None,
        make_current: bool = True,
        replay_id: str = "",
    ) -> None:
        """The retrieval as its version (kept beside the earlier ones) and, when ``make_current``, as the chunk's
        current retrieval. Saves made at the same time go as one statement (``save_retrievals``).

        ``hits``: ``convert.hit_to_dict``'s; a list handed again (the same object) is split into records and
        entries once (``hit_lists.HitListSplitter``)."""
        await self._retrieval_saves(
            RetrievalSave(
                analysis_id, chunk_id, retrieval_key, kb_version, query, hits, version_id, config, make_current, replay_id
            )
        )

    async def save_retrievals(self, saves: Sequence[RetrievalSave]) -> list[None]:
        """``save_retrieval`` of many chunks in one statement (distinct chunk and version).

        Its parts commit together: one round trip and one commit for the batch. The hits are stored as
        ``hit_lists`` says: each distinct list once, each knowledge record once (the records this process
        stored before are not sent again), the version rows naming their list.
        """
        splits = [self._hit_splitter.split(x.hits) for x in saves]
        lists = {s.sha256: s.entries for s in splits}
        records = {sha: r for s in splits for sha, r in s.records.items() if sha not in self._records_stored}
        await self._execute_returning(
            f"""/* save_retrievals */ with doc as (select %(lists)s::jsonb as lists, %(records)s::jsonb as records),
            record_rows as (
                insert into {SCHEMA}.hit_records (sha256, hit)
                select r.key, r.value from doc, jsonb_each(doc.records) as r
                on conflict (sha256) do nothing),
            list_rows as (
                insert into {SCHEMA}.hit_lists (sha256, hits)
                select l.key, l.value from doc, jsonb_each(doc.lists) as l
                on conflict (sha256) do nothing),
            i as (
                select e->>'a' as a, e->>'c' as c, e->>'v' as v, e->>'key' as key, e->>'kb' as kb,
                  e->'query' as query, e->>'hs' as hs, e->'hits' as hits, e->'config' as config,
                  e->>'replay' as replay, (e->>'current')::bool as current
                from doc, jsonb_array_elements(%(saves)s::jsonb) as e),
            version_row as (
                insert into {SCHEMA}.result_versions (analysis_id, version_id, stage, config, replay_id)
                select distinct on (i.a, i.v) i.a, i.v, 'retrieve', i.config, i.replay from i where i.v <> ''
                on conflict (analysis_id, version_id) do nothing),
            version as (
                insert into {SCHEMA}.retrieval_versions
                  (analysis_id, chunk_id, version_id, retrieval_key, kb_version, query, hits, hits_sha256)
                select i.a, i.c, i.v, i.key, i.kb, i.query, null, i.hs from i where i.v <> ''
                on conflict (analysis_id, chunk_id, version_id) do update set retrieval_key = excluded.retrieval_key,
                  kb_version = excluded.kb_version, query = excluded.query, hits = null, hits_sha256 = excluded.hits_sha256),
            current_row as (
                insert into {SCHEMA}.retrievals (analysis_id, chunk_id, retrieval_key, kb_version, query, hits, version_id)
                -- The hits are in the version row (CURRENT_RETRIEVALS reads them there).
                select distinct on (i.a, i.c) i.a, i.c, i.key, i.kb, i.query, case when i.v <> '' then null else i.hits end, i.v
                from i where i.current
                on conflict (analysis_id, chunk_id) do update set retrieval_key = excluded.retrieval_key,
                  kb_version = excluded.kb_version, query = excluded.query, hits = excluded.hits,
                  version_id = excluded.version_id)
            -- The analysis's own run: its first version is the current one.
            update {SCHEMA}.analyses t set current_retrieval_version = first.v
            from (select distinct on (i.a) i.a, i.v from i where i.v <> '' and i.current and i.replay = '' order by i.a, i.v) first
            where t.analysis_id = first.a and t.current_retrieval_version = ''""",
            # One JSON document for the batch: encoded once, no array literal to quote element by element.
            {
                "saves": Jsonb(
                    [
                        {
                            "a": x.analysis_id,
                            "c": x.chunk_id,
                            "v": x.version_id,
                            "key": x.retrieval_key,
                            "kb": x.kb_version,
                            "query": x.query,
                            "hs": split.sha256,
                            # A row without a version keeps its own hits (it has no list to name).
                            "hits": None if x.version_id else x.hits,
                            "config": x.config or {},
                            "replay": x.replay_id,
                            "current": x.make_current,
                        }
                        for x, split in zip(saves, splits)
                    ]
                ),
                "lists": Jsonb(lists),
                "records": Jsonb(records),
            },
        )
        if len(self._records_stored) > RECORDS_REMEMBERED:
            self._records_stored.clear()
        self._records_stored.update(records)
        # A later reuse read of these lists (the next analysis of the project) needs no statement for them.
        for sha, record in records.items():
            self._records_held.put(sha, record)
        return [None] * len(saves)

    async def get_retrieval_version(self, analysis_id: str, chunk_id: str, version_id: str) -> RetrievalRow | None:
        return RetrievalRow.from_optional(
            await self._fetchone(
                f"""select {RetrievalRow.select_list()} from {RETRIEVAL_VERSIONS} v
                where analysis_id = %s and chunk_id = %s and version_id = %s""",
                (analysis_id, chunk_id, version_id),
            )
        )

    async def get_retrieval(self, analysis_id: str, chunk_id: str) -> RetrievalRow | None:
        return RetrievalRow.from_optional(
            await self._fetchone(
                f"select {RetrievalRow.select_list()} from {CURRENT_RETRIEVALS} r where analysis_id = %s and chunk_id = %s",
                (analysis_id, chunk_id),
            )
        )

    async def api_mapping_payloads(self) -> list[tuple[str, dict]]:
        rows = await self._fetchall(f"select id, payload from {SCHEMA}.api_mapping")
        return [(r["id"], r["payload"]) for r in rows]

    # ------------------------------------------------------------ judgments

    async def get_cached_judgment(self, judgment_key: str) -> dict | None:
        """The cached judgment of a key; lookups made at the same time are one statement."""
        return await self._judgment_cache_reads(judgment_key)

    async def cached_judgments(self, keys: Sequence[str]) -> list[dict | None]:
        rows = await self._fetchall(
            f"select judgment_key, judgment from {SCHEMA}.judgment_cache where judgment_key = any(%s)", (list(keys),)
        )
        by_key = {r["judgment_key"]: r["judgment"] for r in rows}
        return [by_key.get(k) for k in keys]

    async def _unfinished(self, conn, analysis_id: str) -> bool:
        """Whether a file is still queued or a chunk not yet settled by the aggregator.

        Two probes of partial indexes (migration 0005): constant time whatever the
        number of chunks, so checking after every aggregate message stays O(1).
        """
        cur = await conn.execute(
            f"""select exists (select 1 from {SCHEMA}.files where analysis_id = %(a)s and included and status = 'queued')
                 or exists (select 1 from {SCHEMA}.chunk_stages where analysis_id = %(a)s and stage = 'aggregate'
                            and status not in ('done', 'failed')) as unfinished""",
            {"a": analysis_id},
        )
        return bool((await cur.fetchone())["unfinished"])

    async def ready_to_finalize(self, analysis_ids: Sequence[str]) -> list[bool]:
        """For each analysis: whether it is running with every included file chunked and every chunk
        settled by the aggregator (the probes of ``_unfinished``, for many analyses in one statement)."""
        rows = await self._fetchall(
            f"""select a.analysis_id from {SCHEMA}.analyses a
            where a.analysis_id = any(%(ids)s::text[]) and a.status = 'running'
              and not exists (select 1 from {SCHEMA}.files f
                              where f.analysis_id = a.analysis_id and f.included and f.status = 'queued')
              and not exists (select 1 from {SCHEMA}.chunk_stages s
                              where s.analysis_id = a.analysis_id and s.stage = 'aggregate' and s.status not in ('done', 'failed'))""",
            {"ids": list(analysis_ids)},
        )
        ready = {r["analysis_id"] for r in rows}
        return [a in ready for a in analysis_ids]

    async def finalize_if_complete(self, analysis_id: str, compute: Callable[[list[ChunkOutcomeRow]], dict]) -> dict | None:
        """Compute and store the verdict once every included file is chunked and every chunk settled.

        ``compute`` maps the chunk outcome rows to a verdict dict. Returns the
        verdict when this call finalized the analysis, None otherwise (still
        running, or already finalized by another aggregator or an earlier
        delivery). The check runs first without a lock (the common case: not
        complete yet), one statement for every analysis this process's handlers
        ask about at the same time; only then is the analysis row locked, the
        check repeated under the lock, and every chunk read, once per analysis.
        """
        if not await self._ready_checks(analysis_id):
            return None
        async with self.pool.connection() as conn:
            async with conn.transaction():
                # The row lock serialises concurrent aggregators: the first one
                # finalizes, the others see 'done' and leave.
                cur = await conn.execute(f"select status from {SCHEMA}.analyses where analysis_id = %s for update", (analysis_id,))
                analysis = cast("dict | None", await cur.fetchone())
                if analysis is None or analysis["status"] != "running" or await self._unfinished(conn, analysis_id):
                    return None
                cur = await conn.execute(
                    f"""select c.chunk_id, c.source_file, c.chunk_kind, f.source_kind,
                          coalesce(s.status, 'waiting') as agg_status, j.signal, j.confidence,
                          j.judgment -> 'evidence_kinds' as evidence_kinds
                        from {SCHEMA}.chunks c
                        join {SCHEMA}.files f on f.analysis_id = c.analysis_id and f.source_file = c.source_file
                        left join {SCHEMA}.chunk_stages s on s.analysis_id = c.analysis_id and s.chunk_id = c.chunk_id and s.stage = 'aggregate'
                        left join {SCHEMA}.judgments j on j.analysis_id = c.analysis_id and j.chunk_id = c.chunk_id
                        where c.analysis_id = %s order by c.source_file, c.chunk_order""",
                    (analysis_id,),
                )
                rows = ChunkOutcomeRow.from_rows(await cur.fetchall())
                verdict = compute(rows)
                await conn.execute(
                    f"""insert into {SCHEMA}.verdicts (analysis_id, label, confidence, counts, basis) values (%s, %s, %s, %s, %s)
                    on conflict (analysis_id) do update set label = excluded.label, confidence = excluded.confidence,
                      counts = excluded.counts, basis = excluded.basis, computed_at = now()""",
                    (analysis_id, verdict["label"], verdict["confidence"], Jsonb(verdict["counts"]), Jsonb(verdict["basis"])),
                )
                # Every chunk settled; failed ones (or failed files) make it "completed with failures", never a plain "done".
                failed = any(r.agg_status == "failed" for r in rows) or await self._has_failed_files(conn, analysis_id)
                await conn.execute(
                    f"""update {SCHEMA}.analyses set status = %s, finished_at = coalesce(finished_at, now()), updated_at = now()
                    where analysis_id = %s""",
                    ("completed_with_failures" if failed else "done", analysis_id),
                )
                return verdict

    async def _has_failed_files(self, conn, analysis_id: str) -> bool:
        cur = await conn.execute(
            f"select exists (select 1 from {SCHEMA}.files where analysis_id = %s and status = 'failed') as f", (analysis_id,)
        )
        row = cast("dict", await cur.fetchone())
        return bool(row["f"])

    async def list_analyses(self, limit: int = 100) -> list[AnalysisSummary]:
        rows = await self._fetchall(
            f"""select a.analysis_id, a.project_id, a.prompt, a.status, a.source_origin, a.input_ref, a.created_at, a.finished_at,
                  a.files_total, a.files_included, v.label, v.confidence
                from {SCHEMA}.analyses a left join {SCHEMA}.verdicts v on v.analysis_id = a.analysis_id
                order by a.created_at desc limit %s""",
            (limit,),
        )
        return AnalysisSummary.from_rows(rows)

    async def get_judgment(self, analysis_id: str, chunk_id: str) -> JudgmentRow | None:
        return JudgmentRow.from_optional(
            await self._fetchone(
                f"select {JudgmentRow.select_list()} from {SCHEMA}.judgments where analysis_id = %s and chunk_id = %s",
                (analysis_id, chunk_id),
            )
        )

    async def chunk_stages(self, analysis_id: str, chunk_id: str) -> list[StageRow]:
        rows = await self._fetchall(
            f"""select {StageRow.select_list()} from {SCHEMA}.chunk_stages
            where analysis_id = %s and chunk_id = %s order by stage""",
            (analysis_id, chunk_id),
        )
        return StageRow.from_rows(rows)

    async def get_verdict(self, analysis_id: str) -> VerdictRow | None:
        return VerdictRow.from_optional(
            await self._fetchone(f"select {VerdictRow.select_list()} from {SCHEMA}.verdicts where analysis_id = %s", (analysis_id,))
        )

    async def list_chunk_results(self, analysis_id: str, source_file: str = "", chunk_id: str = "") -> list[ChunkResultRow]:
        rows = await self._fetchall(
            f"""select c.chunk_id, c.source_file, c.chunk_order, c.chunk_kind, c.start_line, c.end_line, c.chunk,
                  f.sha256, a.project_id,
                  (select jsonb_object_agg(s.stage, jsonb_build_object('status', s.status, 'attempts', s.attempts,
                      'last_error', s.last_error, 'trace_id', s.trace_id, 'worker', s.worker))
                     from {SCHEMA}.chunk_stages s where s.analysis_id = c.analysis_id and s.chunk_id = c.chunk_id) as stages,
                  r.query, r.hits, j.judgment
                from {SCHEMA}.chunks c
                join {SCHEMA}.files f on f.analysis_id = c.analysis_id and f.source_file = c.source_file
                join {SCHEMA}.analyses a on a.analysis_id = c.analysis_id
                left join lateral {current_retrieval_of("c")} r on true
                left join {SCHEMA}.judgments j on j.analysis_id = c.analysis_id and j.chunk_id = c.chunk_id
                where c.analysis_id = %s and (%s = '' or c.source_file = %s) and (%s = '' or c.chunk_id = %s)
                order by f.file_order, c.chunk_order""",
            (analysis_id, source_file, source_file, chunk_id, chunk_id),
        )
        return ChunkResultRow.from_rows(rows)

    async def progress(self, analysis_id: str) -> Progress:
        # Read without touching the settled chunks (migration 0022): a file's chunks and their stage rows
        # are written with its chunk count in one transaction, and every chunk has one aggregate row, so
        # the chunks done are the chunks less the unsettled and the failed aggregate rows.
        row = await self._fetchone(
            f"""with f as (
                  select count(*) filter (where included) as files_total,
                         count(*) filter (where included and status <> 'queued') as files_chunked,
                         coalesce(sum(chunk_count), 0) as chunks_total
                  from {SCHEMA}.files where analysis_id = %(a)s),
                unsettled as (
                  select count(*) as n from {SCHEMA}.chunk_stages
                  where analysis_id = %(a)s and stage = 'aggregate' and status not in ('done', 'failed')),
                failed as (
                  select count(*) filter (where stage = 'aggregate') as aggregate_failed, count(distinct chunk_id) as chunks
                  from {SCHEMA}.chunk_stages where analysis_id = %(a)s and status = 'failed')
            select f.files_total, f.files_chunked, f.chunks_total,
                   f.chunks_total - unsettled.n - failed.aggregate_failed as chunks_done, failed.chunks as chunks_failed
            from f, unsettled, failed""",
            {"a": analysis_id},
        )
        # Counts over sub-selects: always one row.
        return Progress.from_row(cast("dict", row))

    async def record_dead_letter(
        self, *, analysis_id: str, stage: str, subject: str, key: str, error: str, deliveries: int
    ) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                f"""insert into {SCHEMA}.dead_letters (analysis_id, stage, subject, key, error, deliveries) values (%s, %s, %s, %s, %s, %s)
                on conflict (analysis_id, stage, key) do update set error = excluded.error, deliveries = excluded.deliveries""",
                (analysis_id, stage, subject, key, redact_credentials(error)[:4000], deliveries),
            )

    async def dead_letters(self, analysis_id: str) -> list[DeadLetterRow]:
        return DeadLetterRow.from_rows(
            await self._fetchall(
                f"select {DeadLetterRow.select_list()} from {SCHEMA}.dead_letters where analysis_id = %s order by id",
                (analysis_id,),
            )
        )

    # ------------------------------------------------------------ judgments with accounting (judge service)

    async def save_judgment_record(
        self,
        analysis_id: str,
        chunk_id: str,
        *,
        judgment_key: str,
        judgment: dict,
        latency_ms: float,
        cache: bool,
        version_id: str = "",
        retrieval_version: str = "",
        config: dict | None = None,
        make_current: bool = True,
        replay_id: str = "",
        base_version: str = "",
    ) -> None:
        """One judgment: as its version (kept beside the earlier ones) and, when ``make_current``, as the chunk's
        current judgment with its accounting columns (migration 0003); into the reuse cache only when ``cache``.

        Failed judgments are stored (raw output and error visible) but never
        cached, so a later analysis tries again.
        """
        evidence_ids = [e.get("record_id", "") for e in judgment.get("evidence", [])]
        params = {
            "a": analysis_id,
            "c": chunk_id,
            "v": version_id,
            "rv": retrieval_version,
            "key": judgment_key,
            "signal": judgment.get("signal", ""),
            "nm": bool(judgment.get("needs_migration")),
            "conf": float(judgment.get("confidence", 0.0)),
            "kind": judgment.get("judge_kind", ""),
            "model": judgment.get("model", ""),
            "pv": judgment.get("prompt_version", ""),
            "status": judgment.get("status") or "ok",
            "latency": latency_ms,
            "judgment": judgment,
            "error": judgment.get("error", ""),
            "raw": judgment.get("raw_output", ""),
            "pt": int(judgment.get("prompt_tokens", 0)),
            "ct": int(judgment.get("completion_tokens", 0)),
            "calls": int(judgment.get("llm_calls", 0)),
            "route": judgment.get("route", ""),
            "cached": bool(judgment.get("cached", False)),
            "evidence": evidence_ids,
            "config": config or {},
            "base": base_version,
            "replay": replay_id,
            "current": make_current,
            "cache": cache,
        }
        await self._judgment_saves(JudgmentSave(analysis_id, chunk_id, version_id, params))

    async def save_judgment_records(self, saves: Sequence[JudgmentSave]) -> list[None]:
        """``save_judgment_record`` of many chunks in one statement (distinct chunk and version); its parts
        commit together, and the batch's parameters travel as one JSON document."""
        await self._execute_returning(
            f"""/* save_judgment_records */ with i as (
                select e->>'a' as a, e->>'c' as c, e->>'v' as v, e->>'rv' as rv, e->>'key' as key, e->>'signal' as signal,
                  (e->>'nm')::bool as nm, (e->>'conf')::float8 as conf, e->>'kind' as kind, e->>'model' as model,
                  e->>'pv' as pv, e->>'status' as status, (e->>'latency')::float8 as latency, e->'judgment' as judgment,
                  e->>'error' as error, e->>'raw' as raw, (e->>'pt')::int as pt, (e->>'ct')::int as ct,
                  (e->>'calls')::int as calls, e->>'route' as route, (e->>'cached')::bool as cached,
                  array(select jsonb_array_elements_text(e->'evidence')) as evidence, e->'config' as config,
                  e->>'base' as base, e->>'replay' as replay, (e->>'current')::bool as current, (e->>'cache')::bool as cache
                from jsonb_array_elements(%(saves)s::jsonb) as e),
            version_row as (
                insert into {SCHEMA}.result_versions (analysis_id, version_id, stage, config, base_version, replay_id)
                select distinct on (i.a, i.v) i.a, i.v, 'judge', i.config, i.base, i.replay from i where i.v <> ''
                on conflict (analysis_id, version_id) do nothing),
            version as (
                insert into {SCHEMA}.judgment_versions (analysis_id, chunk_id, version_id, retrieval_version,
                    judgment_key, signal, needs_migration, confidence, judge_kind, model, prompt_version, status,
                    latency_ms, judgment)
                select i.a, i.c, i.v, i.rv, i.key, i.signal, i.nm, i.conf, i.kind, i.model, i.pv, i.status, i.latency, i.judgment
                from i where i.v <> ''
                on conflict (analysis_id, chunk_id, version_id) do update set retrieval_version = excluded.retrieval_version,
                  judgment_key = excluded.judgment_key, signal = excluded.signal,
                  needs_migration = excluded.needs_migration, confidence = excluded.confidence,
                  judge_kind = excluded.judge_kind, model = excluded.model, prompt_version = excluded.prompt_version,
                  status = excluded.status, latency_ms = excluded.latency_ms, judgment = excluded.judgment),
            current_row as (
                insert into {SCHEMA}.judgments (analysis_id, chunk_id, judgment_key, signal, needs_migration, confidence,
                    judge_kind, model, prompt_version, latency_ms, judgment, status, error, raw_output, prompt_tokens,
                    completion_tokens, llm_calls, route, cached, evidence_ids, version_id)
                select distinct on (i.a, i.c) i.a, i.c, i.key, i.signal, i.nm, i.conf, i.kind, i.model, i.pv, i.latency,
                    i.judgment, i.status, i.error, i.raw, i.pt, i.ct, i.calls, i.route, i.cached, i.evidence, i.v
                from i where i.current
                on conflict (analysis_id, chunk_id) do update set judgment_key = excluded.judgment_key, signal = excluded.signal,
                  needs_migration = excluded.needs_migration, confidence = excluded.confidence, judge_kind = excluded.judge_kind,
                  model = excluded.model, prompt_version = excluded.prompt_version, latency_ms = excluded.latency_ms,
                  judgment = excluded.judgment, status = excluded.status, error = excluded.error, raw_output = excluded.raw_output,
                  prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,
                  llm_calls = excluded.llm_calls, route = excluded.route, cached = excluded.cached,
                  evidence_ids = excluded.evidence_ids, version_id = excluded.version_id),
            cached_row as (
                insert into {SCHEMA}.judgment_cache (judgment_key, judgment)
                select distinct on (i.key) i.key, i.judgment from i where i.cache
                on conflict (judgment_key) do nothing)
            update {SCHEMA}.analyses t set current_judgment_version = first.v
            from (select distinct on (i.a) i.a, i.v from i where i.v <> '' and i.current and i.replay = '' order by i.a, i.v) first
            where t.analysis_id = first.a and t.current_judgment_version = ''""",
            {"saves": Jsonb([x.params for x in saves])},
        )
        return [None] * len(saves)

    # ------------------------------------------------------------ versions and replays

    async def save_verdict_version(self, analysis_id: str, version_id: str, verdict: dict) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                f"""insert into {SCHEMA}.verdict_versions (analysis_id, version_id, label, confidence, counts, basis)
                values (%s, %s, %s, %s, %s, %s)
                on conflict (analysis_id, version_id) do update set label = excluded.label, confidence = excluded.confidence,
                  counts = excluded.counts, basis = excluded.basis, computed_at = now()""",
                (
                    analysis_id,
                    version_id,
                    verdict["label"],
                    verdict["confidence"],
                    Jsonb(verdict["counts"]),
                    Jsonb(verdict["basis"]),
                ),
            )

    async def result_versions(self, analysis_id: str) -> list[ResultVersionRow]:
        rows = await self._fetchall(
            f"""select rv.analysis_id, rv.version_id, rv.stage, rv.config, rv.base_version, rv.replay_id, rv.created_at,
              v.label, v.confidence, v.counts, v.basis from {SCHEMA}.result_versions rv
            left join {SCHEMA}.verdict_versions v on v.analysis_id = rv.analysis_id and v.version_id = rv.version_id
            where rv.analysis_id = %s order by rv.created_at, rv.version_id""",
            (analysis_id,),
        )
        return ResultVersionRow.from_rows(rows)

    async def verdict_version(self, analysis_id: str, version_id: str) -> VerdictRow | None:
        return VerdictRow.from_optional(
            await self._fetchone(
                f"select {VerdictRow.select_list()} from {SCHEMA}.verdict_versions where analysis_id = %s and version_id = %s",
                (analysis_id, version_id),
            )
        )

    async def judgment_version_rows(self, analysis_id: str, chunk_id: str = "") -> list[JudgmentVersionRow]:
        """Every judgment version of the analysis's chunks (or one chunk's), each with the hits of the retrieval it judged."""
        rows = await self._fetchall(
            f"""select j.chunk_id, j.version_id, j.retrieval_version, j.judgment, j.created_at, r.hits, r.query, r.kb_version
            from {SCHEMA}.judgment_versions j
            left join lateral {retrieval_version_of("j", "retrieval_version")} r on true
            where j.analysis_id = %s and (%s = '' or j.chunk_id = %s) order by j.chunk_id, j.created_at desc""",
            (analysis_id, chunk_id, chunk_id),
        )
        return JudgmentVersionRow.from_rows(rows)

    async def retrieval_version_rows(self, analysis_id: str, chunk_id: str) -> list[RetrievalRow]:
        rows = await self._fetchall(
            f"""select {RetrievalRow.select_list()} from {RETRIEVAL_VERSIONS} v
            where analysis_id = %s and chunk_id = %s order by created_at desc""",
            (analysis_id, chunk_id),
        )
        return RetrievalRow.from_rows(rows)

    async def chunk_places(self, analysis_id: str) -> list[ChunkPlace]:
        """Every chunk's place and aggregate status, in file then chunk order."""
        rows = await self._fetchall(
            f"""select c.chunk_id, c.source_file, c.chunk_order, c.chunk_kind, c.start_line, c.end_line, f.source_kind,
                  coalesce(s.status, 'waiting') as agg_status
            from {SCHEMA}.chunks c
            join {SCHEMA}.files f on f.analysis_id = c.analysis_id and f.source_file = c.source_file
            left join {SCHEMA}.chunk_stages s on s.analysis_id = c.analysis_id and s.chunk_id = c.chunk_id and s.stage = 'aggregate'
            where c.analysis_id = %s order by f.file_order, c.chunk_order""",
            (analysis_id,),
        )
        return ChunkPlace.from_rows(rows)

    async def chunk_task_rows(self, analysis_id: str, chunk_ids: Sequence[str], source_files: Sequence[str]) -> list[ChunkTaskRow]:
        """The trace fields of the chosen chunks (all chunks when both lists are empty), for rebuilding their messages."""
        rows = await self._fetchall(
            f"""select c.chunk_id, c.source_file, c.chunk_order, c.chunk_kind, f.sha256, a.project_id
            from {SCHEMA}.chunks c
            join {SCHEMA}.files f on f.analysis_id = c.analysis_id and f.source_file = c.source_file
            join {SCHEMA}.analyses a on a.analysis_id = c.analysis_id
            where c.analysis_id = %(a)s and ((cardinality(%(c)s::text[]) = 0 and cardinality(%(f)s::text[]) = 0)
              or c.chunk_id = any(%(c)s::text[]) or c.source_file = any(%(f)s::text[]))
            order by f.file_order, c.chunk_order""",
            {"a": analysis_id, "c": list(chunk_ids), "f": list(source_files)},
        )
        return ChunkTaskRow.from_rows(rows)

    async def start_replay(
        self,
        *,
        replay_id: str,
        analysis_id: str,
        from_stage: str,
        config: dict,
        base_version: str,
        chunk_ids: Sequence[str],
        stages: Sequence[str],
    ) -> StartedReplay:
        """Record the replay (or find it again: one more run) and a waiting row per chunk and stage not yet settled.

        Returns the replay row and the chunks this replay already finished.
        """
        async with self.pool.connection() as conn:
            async with conn.transaction():
                cur = await conn.execute(
                    f"""insert into {SCHEMA}.replays (replay_id, analysis_id, from_stage, config, base_version)
                    values (%s, %s, %s, %s, %s)
                    on conflict (replay_id) do update set run = {SCHEMA}.replays.run + 1, updated_at = now(),
                      status = 'running', finished_at = null
                    returning {ReplayRow.select_list()}""",
                    (replay_id, analysis_id, from_stage, Jsonb(config), base_version),
                )
                replay = ReplayRow.from_row(cast("dict", await cur.fetchone()))
                cur = await conn.execute(
                    f"""select chunk_id from {SCHEMA}.replay_chunks where replay_id = %s and stage = 'aggregate'
                    and status in ('done', 'failed') and chunk_id = any(%s)""",
                    (replay_id, list(chunk_ids)),
                )
                settled = {r["chunk_id"] for r in cast("list[dict]", await cur.fetchall())}
                async with conn.cursor() as c2:
                    await c2.executemany(
                        f"""insert into {SCHEMA}.replay_chunks (replay_id, analysis_id, chunk_id, stage, status)
                        values (%s, %s, %s, %s, 'waiting') on conflict do nothing""",
                        [(replay_id, analysis_id, cid, stage) for cid in chunk_ids if cid not in settled for stage in stages],
                    )
                if len(settled) == len(set(chunk_ids)):
                    # Nothing left to do: the replay stays as it finished.
                    await conn.execute(
                        f"""update {SCHEMA}.replays set status = case when exists (select 1 from {SCHEMA}.replay_chunks
                            where replay_id = %(r)s and status = 'failed') then 'completed_with_failures' else 'done' end,
                          finished_at = coalesce(finished_at, now()) where replay_id = %(r)s""",
                        {"r": replay_id},
                    )
                return StartedReplay(replay, sorted(settled))

    async def set_replay_source(self, replay_id: str, chunk_id: str, source: str) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                f"update {SCHEMA}.replay_chunks set source = %s where replay_id = %s and chunk_id = %s",
                (source, replay_id, chunk_id),
            )

    async def replay_row(self, replay_id: str) -> ReplayRow | None:
        return ReplayRow.from_optional(
            await self._fetchone(f"select {ReplayRow.select_list()} from {SCHEMA}.replays where replay_id = %s", (replay_id,))
        )

    async def replay_chunk_rows(self, replay_id: str) -> list[ReplayChunkRow]:
        rows = await self._fetchall(
            f"select {ReplayChunkRow.select_list()} from {SCHEMA}.replay_chunks where replay_id = %s order by chunk_id, stage",
            (replay_id,),
        )
        return ReplayChunkRow.from_rows(rows)

    async def claim_replay_stage(self, replay_id: str, chunk_id: str, stage: str, *, worker: str, trace_id: str = "") -> bool:
        """The replay's claim of one chunk stage: like claim_stage, on the replay's own rows."""
        row = await self._execute_returning(
            f"""update {SCHEMA}.replay_chunks set status = 'in_progress', attempts = attempts + 1, worker = %(w)s,
              trace_id = case when %(t)s <> '' then %(t)s else trace_id end, started_at = now(), updated_at = now()
            where replay_id = %(r)s and chunk_id = %(c)s and stage = %(s)s and status not in ('done', 'failed')
            returning 1 as claimed""",
            {"r": replay_id, "c": chunk_id, "s": stage, "w": worker, "t": trace_id},
        )
        return row is not None

    async def finish_replay_stage(
        self, replay_id: str, chunk_id: str, stage: str, status: str, *, error: str = "", worker: str = "", result_version: str = ""
    ) -> None:
        await self._execute_returning(
            f"""update {SCHEMA}.replay_chunks set status = case when status = 'done' then 'done' else %(st)s end,
              last_error = case when %(e)s <> '' then %(e)s else last_error end,
              worker = case when %(w)s <> '' then %(w)s else worker end,
              result_version = case when %(v)s <> '' then %(v)s else result_version end, updated_at = now()
            where replay_id = %(r)s and chunk_id = %(c)s and stage = %(s)s""",
            {"r": replay_id, "c": chunk_id, "s": stage, "st": status, "e": error, "w": worker, "v": result_version},
        )

    async def mark_replay_stage(self, replay_id: str, chunk_id: str, stage: str, status: str, *, error: str = "") -> None:
        await self._execute_returning(
            f"""update {SCHEMA}.replay_chunks set status = case when status = 'done' then 'done' else %(st)s end,
              last_error = case when %(e)s <> '' then %(e)s else last_error end, updated_at = now()
            where replay_id = %(r)s and chunk_id = %(c)s and stage = %(s)s""",
            {"r": replay_id, "c": chunk_id, "s": stage, "st": status, "e": error},
        )

    async def replay_stage_row(self, replay_id: str, chunk_id: str, stage: str) -> ReplayChunkRow | None:
        return ReplayChunkRow.from_optional(
            await self._fetchone(
                f"select {ReplayChunkRow.select_list()} from {SCHEMA}.replay_chunks where replay_id = %s and chunk_id = %s and stage = %s",
                (replay_id, chunk_id, stage),
            )
        )

    async def set_replay_judgment_version(self, replay_id: str, version_id: str) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                f"update {SCHEMA}.replays set judgment_version = %s where replay_id = %s and judgment_version = ''",
                (version_id, replay_id),
            )

    async def replay_unfinished(self, replay_id: str) -> bool:
        row = await self._fetchone(
            f"""select exists (select 1 from {SCHEMA}.replay_chunks where replay_id = %s and stage = 'aggregate'
                  and status not in ('done', 'failed')) as unfinished""",
            (replay_id,),
        )
        return bool(row and row["unfinished"])

    async def finish_replay_if_complete(self, replay_id: str) -> ReplayRow | None:
        """Mark the replay finished once no chunk of it is unsettled; the replay row when this call finished it."""
        async with self.pool.connection() as conn:
            async with conn.transaction():
                cur = await conn.execute(f"select * from {SCHEMA}.replays where replay_id = %s for update", (replay_id,))
                replay = cast("dict | None", await cur.fetchone())
                if replay is None or replay["status"] != "running":
                    return None
                cur = await conn.execute(
                    f"""select exists (select 1 from {SCHEMA}.replay_chunks where replay_id = %(r)s and stage = 'aggregate'
                          and status not in ('done', 'failed')) as unfinished,
                        exists (select 1 from {SCHEMA}.replay_chunks where replay_id = %(r)s and status = 'failed') as failed""",
                    {"r": replay_id},
                )
                row = cast("dict", await cur.fetchone())
                if row["unfinished"]:
                    return None
                cur = await conn.execute(
                    f"""update {SCHEMA}.replays set status = %s, finished_at = now(), updated_at = now() where replay_id = %s
                    returning {ReplayRow.select_list()}""",
                    ("completed_with_failures" if row["failed"] else "done", replay_id),
                )
                return ReplayRow.from_row(cast("dict", await cur.fetchone()))

    async def set_current_versions(
        self, analysis_id: str, *, judgment_version: str = "", retrieval_version: str = "", verdict: dict | None = None
    ) -> None:
        """Point the analysis at these versions and make ``verdict`` its current one."""
        async with self.pool.connection() as conn:
            async with conn.transaction():
                await conn.execute(
                    f"""update {SCHEMA}.analyses set
                      current_judgment_version = case when %(j)s <> '' then %(j)s else current_judgment_version end,
                      current_retrieval_version = case when %(r)s <> '' then %(r)s else current_retrieval_version end,
                      updated_at = now() where analysis_id = %(a)s""",
                    {"a": analysis_id, "j": judgment_version, "r": retrieval_version},
                )
                if verdict is not None:
                    await conn.execute(
                        f"""insert into {SCHEMA}.verdicts (analysis_id, label, confidence, counts, basis) values (%s, %s, %s, %s, %s)
                        on conflict (analysis_id) do update set label = excluded.label, confidence = excluded.confidence,
                          counts = excluded.counts, basis = excluded.basis, computed_at = now()""",
                        (analysis_id, verdict["label"], verdict["confidence"], Jsonb(verdict["counts"]), Jsonb(verdict["basis"])),
                    )

    async def replay_stage_rows_of_chunk(self, analysis_id: str, chunk_id: str) -> list[ReplayChunkStageRow]:
        rows = await self._fetchall(
            f"""select {ReplayChunkRow.select_list("rc")}, r.from_stage
            from {SCHEMA}.replay_chunks rc join {SCHEMA}.replays r on r.replay_id = rc.replay_id
            where rc.analysis_id = %s and rc.chunk_id = %s order by rc.updated_at, rc.stage""",
            (analysis_id, chunk_id),
        )
        return ReplayChunkStageRow.from_rows(rows)

    # ------------------------------------------------------------ web screen (read only)

    async def web_chunk_rows(self, analysis_id: str, since: Any = None) -> list[WebChunkRow]:
        """One row per chunk for the live list: place, per-stage state, judgment summary,
        and ``changed_at`` (latest stage update). With ``since``, only the chunks
        whose stage rows changed after it."""
        rows = await self._fetchall(
            f"""select c.chunk_id, c.source_file, c.chunk_order, c.chunk_kind, c.start_line, c.end_line,
                  coalesce(c.chunk->>'name', '') as name, f.source_kind, f.file_order, st.stages, st.changed_at,
                  j.signal, j.needs_migration, j.confidence, j.status as judgment_status,
                  coalesce(j.judgment->'migration_notes', '[]'::jsonb) as migration_notes
                from {SCHEMA}.chunks c
                join {SCHEMA}.files f on f.analysis_id = c.analysis_id and f.source_file = c.source_file
                join lateral (select jsonb_object_agg(s.stage, jsonb_build_object('status', s.status, 'attempts', s.attempts,
                                 'last_error', s.last_error)) as stages, max(s.updated_at) as changed_at
                              from {SCHEMA}.chunk_stages s where s.analysis_id = c.analysis_id and s.chunk_id = c.chunk_id) st on true
                left join {SCHEMA}.judgments j on j.analysis_id = c.analysis_id and j.chunk_id = c.chunk_id
                where c.analysis_id = %(a)s and (%(since)s::timestamptz is null or c.chunk_id in (
                  select s.chunk_id from {SCHEMA}.chunk_stages s where s.analysis_id = %(a)s and s.updated_at > %(since)s::timestamptz))
                order by f.file_order, c.chunk_order""",
            {"a": analysis_id, "since": since},
        )
        return WebChunkRow.from_rows(rows)

    async def web_files_changed(self, analysis_id: str, since: Any = None) -> list[FileRow]:
        rows = await self._fetchall(
            f"""select {FileRow.select_list()} from {SCHEMA}.files where analysis_id = %(a)s
                and (%(since)s::timestamptz is null or updated_at > %(since)s::timestamptz) order by file_order""",
            {"a": analysis_id, "since": since},
        )
        return FileRow.from_rows(rows)

    async def web_timing(self, analysis_id: str, window_s: float = 30.0) -> WebTiming:
        """Chunks finished (aggregate done) in total and within the last ``window_s``, with the clock of the database."""
        # An aggregate without group by: always one row.
        return WebTiming.from_row(
            cast(
                "dict",
                await self._fetchone(
                    f"""select count(*) as done, count(*) filter (where s.updated_at > now() - make_interval(secs => %(w)s)) as recent,
                  min(s.updated_at) as first_done, max(s.updated_at) as last_done, now() as now,
                  (select created_at from {SCHEMA}.analyses where analysis_id = %(a)s) as created_at,
                  (select max(updated_at) from {SCHEMA}.chunk_stages where analysis_id = %(a)s) as cursor
                from {SCHEMA}.chunk_stages s where s.analysis_id = %(a)s and s.stage = 'aggregate' and s.status = 'done'""",
                    {"a": analysis_id, "w": window_s},
                ),
            )
        )

    async def web_file_chunks(self, analysis_id: str, source_file: str) -> list[WebFileChunkRow]:
        """Every chunk of one file with its retrieval, judgment (and accounting) and stage rows."""
        rows = await self._fetchall(
            f"""select c.chunk_id, c.chunk_order, c.start_line, c.end_line, c.chunk,
                  (select jsonb_agg(jsonb_build_object('stage', s.stage, 'status', s.status, 'attempts', s.attempts,
                      'last_error', s.last_error, 'worker', s.worker, 'trace_id', s.trace_id,
                      'started_at', s.started_at, 'updated_at', s.updated_at) order by s.stage)
                     from {SCHEMA}.chunk_stages s where s.analysis_id = c.analysis_id and s.chunk_id = c.chunk_id) as stages,
                  r.query, r.hits, r.kb_version,
                  j.judgment, j.judge_kind, j.model, j.prompt_version, j.latency_ms, j.prompt_tokens, j.completion_tokens,
                  j.llm_calls, j.route, j.cached, j.status as judgment_status, j.error as judgment_error
                from {SCHEMA}.chunks c
                left join lateral {current_retrieval_of("c")} r on true
                left join {SCHEMA}.judgments j on j.analysis_id = c.analysis_id and j.chunk_id = c.chunk_id
                where c.analysis_id = %s and c.source_file = %s order by c.chunk_order""",
            (analysis_id, source_file),
        )
        return WebFileChunkRow.from_rows(rows)

    async def web_file_versions(self, project_id: str, source_file: str) -> list[FileVersionRow]:
        """The analyses of a project that list this file, newest first, with the file's content hash."""
        rows = await self._fetchall(
            f"""select a.analysis_id, a.created_at, a.status, f.sha256, f.included from {SCHEMA}.analyses a
                join {SCHEMA}.files f on f.analysis_id = a.analysis_id and f.source_file = %s
                where a.project_id = %s order by a.created_at desc limit 20""",
            (source_file, project_id),
        )
        return FileVersionRow.from_rows(rows)

    async def web_latest_analysis(self, project_id: str) -> LatestAnalysis | None:
        return LatestAnalysis.from_optional(
            await self._fetchone(
                f"select analysis_id, created_at from {SCHEMA}.analyses where project_id = %s order by created_at desc limit 1",
                (project_id,),
            )
        )

    async def cached_embedding(self, model: str, sha: str) -> list[float] | None:
        async with self.pool.connection() as conn:
            text = await kb_store.get_cached_embedding(conn, model, sha)
        return None if text is None else [float(x) for x in text.strip("[]").split(",")]

    async def find_records(self, text: str) -> list[KbRecordMatch]:
        async with self.pool.connection() as conn:
            rows = await kb_store.find_records(conn, text)
        return KbRecordMatch.from_rows(rows)

    async def rank_record(self, query: RetrieverQuery, *, kb_version: str = "", **kwargs):
        """``kb_store.rank_record``; with ``kb_version`` ('<data version>/<mode>') over the indexes held for it."""
        if kb_version:
            kwargs["lexical_index"] = await self.lexical_index(kb_version)
            if kwargs.get("query_embedding") is not None:
                kwargs["vector_index"] = await self.vector_index(kb_version)
        async with self.pool.connection() as conn:
            return await kb_store.rank_record(conn, query, **kwargs)
