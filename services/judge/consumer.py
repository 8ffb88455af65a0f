from __future__ import annotations

import asyncio
import os
import socket
import time

from godot_rag import convert
from godot_rag.domain.ids import message_id, subject_token
from godot_rag.errors import PoisonError
from godot_rag.infra.bus import STREAM_CHUNKS, Delivery, StageSpec, chunk_subject
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.telemetry import current_trace_id
from godot_rag.v1 import messages_pb2 as pb
from services.judge.backend import JudgeBackend, judgment_key

STAGE_VERSION = "1"
WORKER = f"judge@{socket.gethostname()}:{os.getpid()}"


def spec_for(max_concurrency: int) -> StageSpec:
    # MaxAckPending is what the judge can really do at once (the LLM server's useful concurrency).
    return StageSpec(durable="judge", stream=STREAM_CHUNKS, filter_subjects=["grag.chunk.judge.>"], ack_wait_s=60,
                     max_ack_pending=max_concurrency, batch=max_concurrency)


async def build_request(ctx: ServiceContext, aid: str, chunk_id: str) -> pb.JudgmentRequest:
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
    declared = await ctx.store.file_declared_names(aid, row["source_file"])
    return pb.JudgmentRequest(
        prompt=analysis["prompt"], project_id=analysis["project_id"], source_file=row["source_file"], chunk_id=chunk_id,
        chunk_order=row["chunk_order"], chunk_kind=row["chunk_kind"], chunk_text=chunk.code_text,
        surrounding_context=chunk.surrounding_context, retrieved_evidence=hits, chunk=chunk,
        source_kind=file_row["source_kind"] if file_row else "", declared_names=declared,
    )


async def start(ctx: ServiceContext, backend: JudgeBackend) -> list[asyncio.Task]:
    async def handle(delivery: Delivery) -> None:
        task = pb.ChunkTask.FromString(delivery.data)
        aid, chunk_id = task.analysis_id, task.trace.chunk_id
        if await ctx.store.stage_status(aid, chunk_id, "judge") != "done":
            await ctx.store.mark_stage(aid, chunk_id, "judge", "in_progress", worker=WORKER, trace_id=current_trace_id(),
                                       count_attempt=True)
            request = await build_request(ctx, aid, chunk_id)
            key = judgment_key(request, backend)
            started = time.perf_counter()
            cached = await ctx.store.get_cached_judgment(key)
            if cached is not None:
                judgment_dict = cached
            else:
                judgment = await backend.judge(request)
                judgment_dict = convert.to_dict(convert.judgment_to_pb(judgment))
            latency_ms = (time.perf_counter() - started) * 1000
            await ctx.store.save_judgment(aid, chunk_id, judgment_key=key, judgment=judgment_dict, latency_ms=latency_ms)
            await ctx.store.mark_stage(aid, chunk_id, "judge", "done", worker=WORKER)
            await ctx.store.mark_stage(aid, chunk_id, "aggregate", "waiting")
        await ctx.bus.publish(chunk_subject("aggregate", aid, subject_token(chunk_id)), delivery.data,
                              message_id(aid, chunk_id, "aggregate", STAGE_VERSION))

    spec = spec_for(ctx.settings.llm_max_concurrency if ctx.settings.judge == "llm" else 8)
    return [asyncio.create_task(ctx.bus.run_stage(spec, handle, ctx.dead_letter, ctx.stop))]
