"""The retrieve stage: a chunk's query, its vector, the knowledge-base search, the stored retrieval.

Query vectors are batched across the messages the retriever holds at once:
every handler asks ``QueryEmbedder.vector`` for its text, and the texts asked
for while the previous call ran go to the model together, as many per call as
the backend gains from (the default int8 graph runs each text alone, so each
handler gets its vector as soon as it is made). Identical texts (a project's
many one-line ``.import`` keys) are embedded once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import queue
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from godot_rag import convert
from godot_rag.domain.aggregation.versions import retrieval_config, retrieval_version_id
from godot_rag.domain.lru import Lru
from godot_rag.domain.models import RetrievalHit, RetrieverQuery
from godot_rag.domain.retrieval.fusion import searches_vectors
from godot_rag.domain.retrieval.query import (
    INTENT_VERSION,
    RETRIEVAL_VERSION,
    TABLE_PRIORITY,
    build_embedding_text,
    build_retriever_query,
)
from godot_rag.errors import PoisonError, RetryableError
from godot_rag.infra.embedder import Embedder, check_model, text_sha256, vector_literal
from godot_rag.infra.rows import ChunkForRetrieval, KbVersionRow
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.store import Store
from godot_rag.pipeline.stage_runner import ChunkWork, Outcome, each, then
from godot_rag.settings import Settings
from godot_rag.stages import Status
from godot_rag.v1 import messages_pb2 as pb

# The largest batch one model call takes: past it, a forward pass costs more
# per text than it saves (attention over padded inputs), measured on 2 cores.
MAX_EMBED_BATCH = 64
# New vectors are written to the embedding cache table this many at a time (one statement).
SAVE_EVERY = 32
KB_VERSION_TTL_S = 5.0
# How long a starting retriever loads its model and indexes before it takes messages (RetrieveStage.warm_up_within).
WARM_UP_WAIT_S = 120.0

log = logging.getLogger(__name__)

# A text queued for the model: the loop to answer on, the text's sha256, the text, its future.
_Job = tuple[asyncio.AbstractEventLoop, str, str, "asyncio.Future[list[float]]"]


def _post(loop: asyncio.AbstractEventLoop, callback, *args) -> None:
    """Run ``callback(*args)`` on ``loop`` from the model's thread; a loop already closed has nobody to answer."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:
        pass


def _fail(fut: asyncio.Future, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class QueryEmbedder:
    """Query vectors: an in-process LRU, then the embedding cache table, then the model, in batches.

    The model runs in a worker thread (it is CPU-bound). It loads in the background
    once the service is up (``RetrieveStage.warm_up``), or on the first query.
    """

    def __init__(self, embedder: Embedder, store: Store, capacity: int = 8192, max_batch: int = MAX_EMBED_BATCH):
        self.embedder = embedder
        self.store = store
        # A backend that runs each text alone answers text by text: the handler waiting for the first
        # vector goes on to its search while the next texts are embedded (a batch of 30 held every
        # handler for the whole batch, and the model and the searches took turns instead of overlapping).
        self.max_batch = max(1, min(max_batch, embedder.texts_per_call))
        # Kept as float32 arrays (the model's and pgvector's precision, so nothing is lost): a list of
        # 384 Python floats takes 12 KB, and 8,192 of them held a third of the retriever's memory.
        self._lru: Lru[str, array] = Lru(capacity)
        self._inflight: dict[str, asyncio.Future[list[float]]] = {}
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._unsaved: list[tuple[str, str]] = []
        self._saving: set[asyncio.Task] = set()
        self._name = ""

    async def name(self) -> str:
        if not self._name:
            # TEI answers its model id over HTTP: not on the event loop.
            self._name = await asyncio.to_thread(lambda: self.embedder.name)
        return self._name

    async def warm_up(self) -> None:
        """Load the model (one text through it, kept nowhere), so that the first query does not wait for it."""
        await asyncio.to_thread(self.embedder.embed, ["warm up"])

    async def vector(self, text: str) -> list[float]:
        sha = text_sha256(text)
        held = self._lru.get(sha)
        if held is not None:
            return held.tolist()
        if sha in self._inflight:
            return await asyncio.shield(self._inflight[sha])
        future: asyncio.Future[list[float]] = asyncio.get_running_loop().create_future()
        self._inflight[sha] = future
        try:
            vec = await self._lookup_or_embed(sha, text)
        except BaseException as exc:
            future.set_exception(exc)
            # Retrieved by the waiters, if any; otherwise this marks it seen.
            future.exception()
            raise
        finally:
            self._inflight.pop(sha, None)
        future.set_result(vec)
        self._remember(sha, vec)
        return vec

    async def _lookup_or_embed(self, sha: str, text: str) -> list[float]:
        cached = await self.store.get_cached_embedding(await self.name(), sha)
        if cached is not None:
            return cached
        loop = asyncio.get_running_loop()
        queued: asyncio.Future[list[float]] = loop.create_future()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._model_thread, name="query-model", daemon=True)
            self._thread.start()
        self._jobs.put((loop, sha, text, queued))
        return await queued

    def _model_thread(self) -> None:
        """The model's own thread: it takes the next texts as soon as a call returns.

        The event loop only queues texts and receives vectors. When the loop handed
        each call to a worker thread, the model sat idle after every text until the
        loop, busy with a search or a save, came round to start the next one.
        """
        while True:
            first = self._jobs.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    self._jobs.put(None)
                    break
                batch.append(job)
            try:
                vectors = self.embedder.embed([text for _, _, text, _ in batch])
            except Exception as exc:  # noqa: BLE001 -- handed to every waiter, which maps it at the bus edge
                for loop, _, _, fut in batch:
                    _post(loop, _fail, fut, RetryableError(f"embedding failed: {exc}"))
                continue
            idle = self._jobs.empty()
            for i, ((loop, sha, _, fut), vec) in enumerate(zip(batch, vectors)):
                _post(loop, self._answer, sha, fut, vec, idle and i == len(batch) - 1)

    def _answer(self, sha: str, fut: asyncio.Future[list[float]], vec: list[float], idle: bool) -> None:
        # Answered first: the cache write is for later analyses, not for these handlers.
        if not fut.done():
            fut.set_result(vec)
        self._unsaved.append((sha, vector_literal(vec)))
        if len(self._unsaved) >= SAVE_EVERY or idle:
            # The name is known: every text reached the queue after looking it up (_lookup_or_embed).
            self._save_later(self._name, self._unsaved)
            self._unsaved = []

    def close(self) -> None:
        """Stop the model's thread after its current call (a service's shutdown: nobody waits for the rest)."""
        while True:
            try:
                self._jobs.get_nowait()
            except queue.Empty:
                break
        if self._thread is not None and self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=10)

    def _save_later(self, model: str, items: list[tuple[str, str]]) -> None:
        task = asyncio.create_task(self._save(model, items))
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def _save(self, model: str, items: list[tuple[str, str]]) -> None:
        try:
            await self.store.put_cached_embeddings(model, items)
        except Exception as exc:  # noqa: BLE001 -- a background write with nobody to answer: logged, never raised
            # Only a cache for later analyses is lost; the vectors were already handed out.
            log.warning("%d query vectors not cached: %s: %s", len(items), type(exc).__name__, exc)

    def _remember(self, sha: str, vec: list[float]) -> None:
        self._lru.put(sha, array("f", vec))


@dataclass(frozen=True)
class SearchPlan:
    """What a chunk's search is asked: its query and the hits per table."""

    query: RetrieverQuery
    limit: int
    reuse: bool = True


@dataclass
class KbVersionCache:
    """The current knowledge-base version row, re-read at most every few seconds (a rebuild is rare)."""

    store: Store
    ttl_s: float = KB_VERSION_TTL_S
    _row: KbVersionRow | None = None
    _read_at: float = 0.0

    async def get(self) -> KbVersionRow | None:
        now = time.monotonic()
        if self._row is None or now - self._read_at > self.ttl_s:
            self._row = await self.store.kb_version()
            self._read_at = now
        return self._row


class SearchCache(Lru[str, list[RetrievalHit]]):
    """Hits of recent searches, by everything that decides them: the whole query, the
    knowledge base searched (data version and embedding model) and the limit.

    Projects repeat themselves (a node with the same properties in many scenes,
    identical import sections, copied helper functions): a repeated chunk costs
    neither a query vector nor a search. The hits are shared, never modified.
    """

    def __init__(self, capacity: int = 2048):
        super().__init__(capacity)

    @staticmethod
    def key(query: RetrieverQuery, kb_version: str, limit: int) -> str:
        return retrieval_key(query, kb_version, limit)


async def searched_kb_version(version: KbVersionRow, embedder: QueryEmbedder | None) -> str:
    """The knowledge base a search reads ('<data version>/<mode>'), once the query model is checked against it."""
    if embedder is not None:
        check_model(version.embedding_model, await embedder.name())
    mode = "lexical" if embedder is None else version.embedding_model
    return f"{version.data_version}/{mode}"


async def retrieve(
    store: Store,
    kb: KbVersionCache,
    query: RetrieverQuery,
    limit: int,
    embedder: QueryEmbedder | None = None,
    cache: SearchCache | None = None,
    reuse: bool = True,
) -> tuple[list[RetrievalHit], str]:
    """Search the knowledge base with the query alone (no trace reaches this function).

    ``reuse``: the hits an earlier retrieval with the same key stored (any analysis)
    answer without a query vector or a search; a replay searches again.
    """
    version = await kb.get()
    if version is None:
        raise RetryableError("the knowledge base is not built yet (godot-rag kb build)", delay_s=5)
    kb_version = await searched_kb_version(version, embedder)
    key = SearchCache.key(query, kb_version, limit)
    if cache is not None and (cached := cache.get(key)) is not None:
        return cached, kb_version
    if reuse and (stored := await store.stored_hits(key)) is not None:
        hits = [convert.hit_from_dict(h) for h in stored]
        if cache is not None:
            cache.put(key, hits)
        return hits, kb_version
    vector = None if embedder is None or not searches_vectors(query) else await embedder.vector(build_embedding_text(query))
    tables = TABLE_PRIORITY.get(query.intent, TABLE_PRIORITY[INTENT_VERSION])  # a gRPC caller may leave it empty
    hits = await store.search(query, tables=tables, limit_per_table=limit, query_embedding=vector, kb_version=kb_version)
    if cache is not None:
        cache.put(key, hits)
    return hits, kb_version


def validate_payload(trace_msg: pb.ChunkTrace, row: ChunkForRetrieval) -> list[str]:
    """The payload's trace must match the committed chunk list and file content."""
    problems: list[str] = []
    if row.chunk_order != trace_msg.chunk_order:
        problems.append(f"payload chunk_order {trace_msg.chunk_order} != file chunk list order {row.chunk_order}")
    if row.source_file != trace_msg.source_file:
        problems.append(f"payload source_file {trace_msg.source_file!r} != {row.source_file!r}")
    if row.file_sha256 is None or row.file_sha256 != trace_msg.source_sha256:
        problems.append("payload source_sha256 does not match the recorded file content")
    return problems


@lru_cache(maxsize=4096)
def retrieval_key(query: RetrieverQuery, kb_version: str, limit: int) -> str:
    """Reuse key of a retrieval: everything that decides its hits (the whole query, the knowledge base
    searched, the query builder's version and the per-table limit). Kept for the queries in hand: a chunk's
    key is asked for by its search and by its save."""
    return hashlib.sha256(json.dumps([dataclasses.astuple(query), kb_version, limit, RETRIEVAL_VERSION]).encode()).hexdigest()


class StoredHitLists(Lru[int, tuple[list[RetrievalHit], list[dict]]]):
    """Hit lists as stored (``hit_to_dict``), by the list object: the searches' caches hand the same list to
    every chunk with the same search (a project's scene nodes of one type, its .import files of one kind),
    converted once; the store then splits that one stored list once. An entry holds its list, so the id it
    is found by stays that list's.
    """

    def __init__(self, capacity: int = 256):
        super().__init__(capacity)

    def of(self, hits: list[RetrievalHit]) -> list[dict]:
        held = self.get(id(hits))
        if held is not None and held[0] is hits:
            return held[1]
        stored = [convert.hit_to_dict(h) for h in hits]
        self.put(id(hits), (hits, stored))
        return stored


def search_limit(asked: int, settings: Settings) -> int:
    """Hits per table for a Search call: the caller's number (0 = the configured default), at most the cap.

    Each hit is a scored row from every search of its table: an unbounded
    number would let one call rank whole tables.
    """
    wanted = asked if asked > 0 else settings.retrieval_limit_per_table
    return max(1, min(wanted, settings.retrieval_max_limit_per_table))


class RetrieveStage:
    """The retrieve stage's work for one chunk: query, search, store."""

    def __init__(self, ctx: ServiceContext, embedder: QueryEmbedder | None):
        self.ctx = ctx
        self.embedder = embedder
        self.kb = KbVersionCache(ctx.store)
        self.cache = SearchCache()
        self.stored_lists = StoredHitLists()
        self._prompts: dict[str, str] = {}

    def close(self) -> None:
        """Stop the query model's thread (the service is shutting down)."""
        if self.embedder is not None:
            self.embedder.close()

    async def warm_up_within(self, timeout_s: float = WARM_UP_WAIT_S) -> None:
        """``warm_up``, given at most ``timeout_s``: the service takes no message before, so none waits in its
        hands while the model and indexes load (seconds on a machine where the whole stack is starting, longer
        than a short AckWait: JetStream would hand the message to another worker as well). Past the limit the
        service goes on (the warm-up with it) and the first searches wait for what is missing. A stop ends the wait."""
        warming = asyncio.create_task(self.warm_up())
        stopping = asyncio.create_task(self.ctx.stop.wait())
        await asyncio.wait({warming, stopping}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not warming.done():
            log.warning("warm-up not finished in %.0fs: taking messages; the first searches load the rest", timeout_s)
            self.ctx.background.append(warming)

    async def warm_up(self) -> None:
        """The knowledge base's indexes (about 1 s) and the query model, loaded at start: otherwise the first
        chunks of the first analysis wait for them. A failure is only logged: the first search loads them again."""
        started = time.perf_counter()
        try:
            version = await self.kb.get()
            if version is None:
                log.info("no knowledge base to load yet: its indexes load on the first search after the build")
                return
            kb_version = await searched_kb_version(version, self.embedder)
            await self.ctx.store.lexical_index(kb_version)
            if self.embedder is not None:
                await self.ctx.store.vector_index(kb_version)
                await self.embedder.warm_up()
        except Exception as exc:  # noqa: BLE001 -- nobody waits for the warm-up; the searches report their own errors
            log.warning("warm-up incomplete: %s: %s", type(exc).__name__, exc)
            return
        log.info("ready to search in %.2fs", time.perf_counter() - started)

    async def prompt_of(self, aid: str) -> str:
        if aid not in self._prompts:
            analysis = await self.ctx.store.get_analysis(aid)
            if analysis is None:
                raise PoisonError(f"analysis {aid} is not recorded")
            self._prompts[aid] = analysis.prompt
        return self._prompts[aid]

    async def search(self, query: RetrieverQuery, limit: int = 0, *, reuse: bool = True) -> tuple[list[RetrievalHit], str]:
        return await retrieve(
            self.ctx.store, self.kb, query, search_limit(limit, self.ctx.settings), self.embedder, self.cache, reuse
        )

    async def __call__(self, item: ChunkWork) -> Outcome:
        plan = await self.query_of(item)
        return await self.save(item, plan, await self.search(plan.query, plan.limit, reuse=plan.reuse))

    async def run_batch(self, items: Sequence[ChunkWork]) -> list[Outcome | BaseException]:
        """The stage's work on a batch, step by step for every chunk at once: the chunk reads are one
        statement, the query vectors are asked together, and the saves (after every search) are one statement."""
        plans = await each(items, self.query_of)
        found = await then(items, plans, lambda _, plan: self.search(plan.query, plan.limit, reuse=plan.reuse))
        searched = [f if isinstance(f, BaseException) else (p, f) for p, f in zip(plans, found)]
        return await then(items, searched, lambda item, pf: self.save(item, pf[0], pf[1]))

    async def query_of(self, item: ChunkWork) -> SearchPlan:
        """The chunk's query, checked against the committed chunk list, and its per-table limit."""
        row = await self.ctx.store.chunk_for_retrieval(item.analysis_id, item.chunk_id)
        if row is None:
            raise PoisonError(f"chunk {item.chunk_id} of analysis {item.analysis_id} is not recorded")
        problems = validate_payload(item.trace, row)
        if problems:
            # A payload that does not match the file's chunk list is not sent on.
            raise PoisonError("validation failed: " + "; ".join(problems))
        chunk = convert.chunk_from_dict(row.chunk)
        # Only the query reaches the search: the trace stays here.
        query = build_retriever_query(prompt=await self.prompt_of(item.analysis_id), chunk=chunk)
        # A replay may search with another per-table limit: that is part of the retrieval's version.
        limit = (item.replay.limit_per_table if item.replay is not None else 0) or self.ctx.settings.retrieval_limit_per_table
        # A replay is asked to search again: it does not take a stored retrieval's hits.
        return SearchPlan(query, limit, reuse=item.replay is None)

    async def save(self, item: ChunkWork, plan: SearchPlan, found: tuple[list[RetrievalHit], str]) -> Outcome:
        """Store the retrieval (saves made at the same time are one statement)."""
        hits, kb_version = found
        version = retrieval_version_id(kb_version=kb_version, retrieval_version=RETRIEVAL_VERSION, limit_per_table=plan.limit)
        await self.ctx.store.save_retrieval(
            item.analysis_id,
            item.chunk_id,
            retrieval_key=retrieval_key(plan.query, kb_version, plan.limit),
            kb_version=kb_version,
            query=convert.query_to_dict(plan.query),
            hits=self.stored_lists.of(hits),
            version_id=version,
            replay_id=item.replay.replay_id if item.replay is not None else "",
            config=retrieval_config(kb_version=kb_version, retrieval_version=RETRIEVAL_VERSION, limit_per_table=plan.limit),
        )
        return Outcome(Status.DONE, version=version)
