from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
from collections import OrderedDict

from opentelemetry import trace

from godot_rag import convert
from godot_rag.domain.ids import message_id, subject_token
from godot_rag.domain.judging.contract import contract_for
from godot_rag.domain.retrieval.query import primary_intent
from godot_rag.errors import PoisonError, RetryableError
from godot_rag.infra.bus import STREAM_CHUNKS, Delivery, StageSpec, chunk_subject
from godot_rag.infra.llm_client import LLMRequestError
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.telemetry import current_trace_id
from godot_rag.v1 import messages_pb2 as pb
from services.judge.backend import STATUS_FAILED, JudgeBackend, failed_judgment, judgment_key, scope_of

log = logging.getLogger(__name__)

STAGE_VERSION = "1"
WORKER = f"judge@{socket.gethostname()}:{os.getpid()}"
ACK_WAIT_S = 60.0


def spec_for(max_concurrency: int) -> StageSpec:
    # MaxAckPending is what the judge can really do at once (the LLM server's useful concurrency).
    return StageSpec(durable="judge", stream=STREAM_CHUNKS, filter_subjects=["grag.chunk.judge.>"], ack_wait_s=ACK_WAIT_S,
                     max_ack_pending=max_concurrency, batch=max_concurrency)


class DeclaredNamesCache:
    """The names a file declares, read once per (analysis, file) instead of once per chunk.

    A file's chunks are committed before any of them is published, so the
    answer cannot change while its chunks are being judged.
    """

    def __init__(self, store, max_entries: int = 256):
        self.store = store
        self.max_entries = max_entries
        self.entries: OrderedDict[tuple[str, str], list[str]] = OrderedDict()

    async def get(self, aid: str, source_file: str) -> list[str]:
        key = (aid, source_file)
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        names = await self.store.file_declared_names(aid, source_file)
        self.entries[key] = names
        if len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)
        return names


async def build_request(ctx: ServiceContext, aid: str, chunk_id: str, declared_cache: DeclaredNamesCache) -> pb.JudgmentRequest:
    row = await ctx.store.get_chunk(aid, chunk_id)
    retrieval = await ctx.store.get_retrieval(aid, chunk_id)
    analysis = await ctx.store.get_analysis(aid)
    if row is None or analysis is None:
        raise PoisonError(f"chunk {chunk_id} of analysis {aid} is not recorded")
    if retrieval is None:
        raise PoisonError(f"chunk {chunk_id} of analysis {aid} reached the judge without a retrieval")
    file_row = await ctx.store.get_file(aid, row["source_file"])
    chunk = convert.from_dict(row["chunk"], pb.Chunk)
    hits = [convert.from_dict(h, pb.RetrievalHit) for h in retrieval["hits"]]
    declared = await declared_cache.get(aid, row["source_file"])
    request = pb.JudgmentRequest(
        prompt=analysis["prompt"], project_id=analysis["project_id"], source_file=row["source_file"], chunk_id=chunk_id,
        chunk_order=row["chunk_order"], chunk_kind=row["chunk_kind"], chunk_text=chunk.code_text,
        surrounding_context=chunk.surrounding_context, retrieved_evidence=hits, chunk=chunk,
        source_kind=file_row["source_kind"] if file_row else "", declared_names=declared,
        intent=(retrieval.get("query") or {}).get("intent") or primary_intent(analysis["prompt"]),
        project_symbols=await ctx.store.file_symbol_scope(aid, row["source_file"]),
    )
    request.judgment_contract = json.dumps(contract_for(scope_of(request)), sort_keys=True)
    return request


async def judge_once(backend: JudgeBackend, request: pb.JudgmentRequest, *, last_attempt: bool, deliveries: int) -> pb.Judgment:
    """The backend's judgment; server trouble on the last delivery becomes a failed judgment, not a lost chunk."""
    try:
        return await backend.judge(request)
    except LLMRequestError as exc:
        return failed_judgment(kind=backend.kind, model=backend.model, prompt_version=backend.prompt_version,
                               error=f"the LLM server rejected the request: {exc}")
    except RetryableError as exc:
        if not last_attempt:
            raise
        return failed_judgment(kind=backend.kind, model=backend.model, prompt_version=backend.prompt_version,
                               error=f"gave up after {deliveries} deliveries: {exc}")


async def start(ctx: ServiceContext, backend: JudgeBackend) -> list[asyncio.Task]:
    declared_cache = DeclaredNamesCache(ctx.store)

    async def handle(delivery: Delivery) -> None:
        task = pb.ChunkTask.FromString(delivery.data)
        aid, chunk_id = task.analysis_id, task.trace.chunk_id
        trace.get_current_span().set_attributes({"godot_rag.chunk_id": chunk_id, "godot_rag.source_file": task.trace.source_file,
                                                 "godot_rag.chunk_order": task.trace.chunk_order})
        # A failed judgment is final for this analysis: it is forwarded again, never redone.
        if await ctx.store.stage_status(aid, chunk_id, "judge") not in ("done", "failed"):
            await ctx.store.mark_stage(aid, chunk_id, "judge", "in_progress", worker=WORKER, trace_id=current_trace_id(),
                                       count_attempt=True)
            request = await build_request(ctx, aid, chunk_id, declared_cache)
            key = judgment_key(request, backend)
            started = time.perf_counter()
            cached = await ctx.store.get_cached_judgment(key)
            if cached is not None:
                judgment = convert.from_dict(cached, pb.Judgment)
                judgment.cached = True
            else:
                # The bus sends progress acks while this runs (a long generation is not redelivered).
                try:
                    judgment = await judge_once(backend, request, last_attempt=delivery.last_attempt,
                                                deliveries=delivery.num_delivered)
                except RetryableError as exc:
                    await ctx.store.mark_stage(aid, chunk_id, "judge", "waiting", error=str(exc)[:2000], worker=WORKER)
                    raise
            latency_ms = (time.perf_counter() - started) * 1000
            failed = judgment.status == STATUS_FAILED
            await ctx.store.save_judgment_record(
                aid, chunk_id, judgment_key=key, judgment=convert.to_dict(judgment), latency_ms=latency_ms,
                cache=not failed and not judgment.cached,
            )
            if failed:
                await ctx.store.mark_stage(aid, chunk_id, "judge", "failed", error=judgment.error[:2000] or "judgment failed",
                                           worker=WORKER)
            else:
                await ctx.store.mark_stage(aid, chunk_id, "judge", "done", worker=WORKER)
            await ctx.store.mark_stage(aid, chunk_id, "aggregate", "waiting")
        # Failed or not, the chunk goes on: the aggregator accounts for every chunk.
        await ctx.bus.publish(chunk_subject("aggregate", aid, subject_token(chunk_id)), delivery.data,
                              message_id(aid, chunk_id, "aggregate", STAGE_VERSION))

    spec = spec_for(ctx.settings.llm_max_concurrency if ctx.settings.judge == "llm" else 8)
    return [asyncio.create_task(ctx.bus.run_stage(spec, handle, ctx.dead_letter, ctx.stop))]
