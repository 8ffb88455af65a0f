from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
from collections import OrderedDict

from opentelemetry import trace

from godot_rag import convert
from godot_rag.domain.ids import message_id, subject_token
from godot_rag.domain.retrieval.query import RETRIEVAL_VERSION, INTENT_VERSION, TABLE_PRIORITY, build_embedding_text, build_retriever_query
from godot_rag.errors import PoisonError, RetryableError
from godot_rag.infra import kb_store
from godot_rag.infra.bus import STREAM_CHUNKS, Delivery, StageSpec, chunk_subject
from godot_rag.infra.embedder import Embedder, check_model, text_sha256, vector_literal
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.telemetry import current_trace_id
from godot_rag.v1 import messages_pb2 as pb

SPEC = StageSpec(durable="retriever", stream=STREAM_CHUNKS, filter_subjects=["grag.chunk.retrieve.>"], ack_wait_s=30, max_ack_pending=8)
STAGE_VERSION = "1"
WORKER = f"retriever@{socket.gethostname()}:{os.getpid()}"


class QueryEmbedder:
    """Query vectors: an in-process LRU, then the embedding cache table, then the model.

    The model runs in a worker thread (it is CPU-bound for tens of ms) and
    loads on the first query, not at start.
    """

    def __init__(self, embedder: Embedder, capacity: int = 4096):
        self.embedder = embedder
        self.capacity = capacity
        self._lru: OrderedDict[str, list[float]] = OrderedDict()
        self._name = ""
        self._lock = asyncio.Lock()

    async def name(self) -> str:
        if not self._name:
            # TEI answers its model id over HTTP: not on the event loop.
            self._name = await asyncio.to_thread(lambda: self.embedder.name)
        return self._name

    async def vector(self, store, text: str) -> list[float]:
        sha = text_sha256(text)
        if sha in self._lru:
            self._lru.move_to_end(sha)
            return self._lru[sha]
        model = await self.name()
        async with store.pool.connection() as conn:
            cached = await kb_store.get_cached_embedding(conn, model, sha)
        if cached is not None:
            vec = [float(x) for x in cached.strip("[]").split(",")]
        else:
            async with self._lock:  # one model call at a time per process
                vec = (await asyncio.to_thread(self.embedder.embed, [text]))[0]
            async with store.pool.connection() as conn:
                await kb_store.put_cached_embedding(conn, model, sha, vector_literal(vec))
        self._lru[sha] = vec
        if len(self._lru) > self.capacity:
            self._lru.popitem(last=False)
        return vec


async def retrieve(ctx: ServiceContext, query, limit: int, embedder: QueryEmbedder | None = None) -> tuple[list, str]:
    """Search the knowledge base with the query alone (no trace reaches this function)."""
    kb = await ctx.store.kb_version()
    if kb is None:
        raise RetryableError("the knowledge base is not built yet (godot-rag kb build)", delay_s=5)
    vector = None
    if embedder is not None:
        check_model(kb["embedding_model"], await embedder.name())
        vector = await embedder.vector(ctx.store, build_embedding_text(query))
    tables = TABLE_PRIORITY.get(query.intent, TABLE_PRIORITY[INTENT_VERSION])  # a gRPC caller may leave it empty
    hits = await ctx.store.search(query, tables=tables, limit_per_table=limit, query_embedding=vector)
    mode = "lexical" if embedder is None else kb["embedding_model"]
    return hits, f"{kb['data_version']}/{mode}"


def validate_payload(trace_msg: pb.ChunkTrace, chunk_row: dict, file_row: dict | None) -> list[str]:
    """The payload's trace must match the committed chunk list and file content."""
    problems: list[str] = []
    if chunk_row["chunk_order"] != trace_msg.chunk_order:
        problems.append(f"payload chunk_order {trace_msg.chunk_order} != file chunk list order {chunk_row['chunk_order']}")
    if chunk_row["source_file"] != trace_msg.source_file:
        problems.append(f"payload source_file {trace_msg.source_file!r} != {chunk_row['source_file']!r}")
    if file_row is None or file_row["sha256"] != trace_msg.source_sha256:
        problems.append("payload source_sha256 does not match the recorded file content")
    return problems


async def start(ctx: ServiceContext, embedder: QueryEmbedder | None = None) -> list[asyncio.Task]:
    prompts: dict[str, str] = {}

    async def prompt_of(aid: str) -> str:
        if aid not in prompts:
            analysis = await ctx.store.get_analysis(aid)
            if analysis is None:
                raise PoisonError(f"analysis {aid} is not recorded")
            prompts[aid] = analysis["prompt"]
        return prompts[aid]

    async def handle(delivery: Delivery) -> None:
        task = pb.ChunkTask.FromString(delivery.data)
        aid, chunk_id = task.analysis_id, task.trace.chunk_id
        trace.get_current_span().set_attributes({"godot_rag.chunk_id": chunk_id, "godot_rag.source_file": task.trace.source_file,
                                                 "godot_rag.chunk_order": task.trace.chunk_order})
        if await ctx.store.stage_status(aid, chunk_id, "retrieve") != "done":
            row = await ctx.store.get_chunk(aid, chunk_id)
            if row is None:
                raise PoisonError(f"chunk {chunk_id} of analysis {aid} is not recorded")
            file_row = await ctx.store.get_file(aid, row["source_file"])
            problems = validate_payload(task.trace, row, file_row)
            if problems:
                # Seed 001: a payload that does not match the file's chunk list is not sent on.
                raise PoisonError("validation failed: " + "; ".join(problems))
            await ctx.store.mark_stage(aid, chunk_id, "retrieve", "in_progress", worker=WORKER, trace_id=current_trace_id(),
                                       count_attempt=True)
            chunk = convert.chunk_from_pb(convert.from_dict(row["chunk"], pb.Chunk))
            # Only the query reaches the search: the trace stays here.
            query = build_retriever_query(prompt=await prompt_of(aid), chunk=chunk)
            hits, kb_version = await retrieve(ctx, query, ctx.settings.retrieval_limit_per_table, embedder)
            key = hashlib.sha256(json.dumps([query.intent, query.query_text, query.raw_chunk_text, kb_version, RETRIEVAL_VERSION])
                                 .encode()).hexdigest()
            await ctx.store.save_retrieval(
                aid, chunk_id, retrieval_key=key, kb_version=kb_version,
                query=convert.to_dict(convert.query_to_pb(query)),
                hits=[convert.to_dict(convert.hit_to_pb(h)) for h in hits],
            )
            await ctx.store.mark_stage(aid, chunk_id, "retrieve", "done", worker=WORKER)
            await ctx.store.mark_stage(aid, chunk_id, "judge", "waiting")
        await ctx.bus.publish(chunk_subject("judge", aid, subject_token(chunk_id)), delivery.data,
                              message_id(aid, chunk_id, "judge", STAGE_VERSION))

    return [asyncio.create_task(ctx.bus.run_stage(SPEC, handle, ctx.dead_letter, ctx.stop))]
