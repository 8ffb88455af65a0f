from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket

from godot_rag import convert
from godot_rag.domain.ids import message_id, subject_token
from godot_rag.domain.query import TABLE_PRIORITY, build_retriever_query
from godot_rag.errors import PoisonError, RetryableError
from godot_rag.infra.bus import STREAM_CHUNKS, Delivery, StageSpec, chunk_subject
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.telemetry import current_trace_id
from godot_rag.v1 import messages_pb2 as pb

SPEC = StageSpec(durable="retriever", stream=STREAM_CHUNKS, filter_subjects=["grag.chunk.retrieve.>"], ack_wait_s=30, max_ack_pending=8)
STAGE_VERSION = "1"
RETRIEVAL_VERSION = "retrieval/1"
WORKER = f"retriever@{socket.gethostname()}:{os.getpid()}"


async def retrieve(ctx: ServiceContext, query, limit: int) -> tuple[list, str]:
    kb = await ctx.store.kb_version()
    if kb is None:
        raise RetryableError("the knowledge base is not built yet (godot-rag kb build)", delay_s=5)
    tables = TABLE_PRIORITY[query.intent]
    hits = await ctx.store.search(query, tables=tables, limit_per_table=limit)
    return hits, kb["data_version"]


async def start(ctx: ServiceContext) -> list[asyncio.Task]:
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
        if await ctx.store.stage_status(aid, chunk_id, "retrieve") != "done":
            row = await ctx.store.get_chunk(aid, chunk_id)
            if row is None:
                raise PoisonError(f"chunk {chunk_id} of analysis {aid} is not recorded")
            await ctx.store.mark_stage(aid, chunk_id, "retrieve", "in_progress", worker=WORKER, trace_id=current_trace_id(),
                                       count_attempt=True)
            chunk = convert.chunk_from_pb(convert.from_dict(row["chunk"], pb.Chunk))
            # Only the query reaches the search: the trace stays here.
            query = build_retriever_query(prompt=await prompt_of(aid), chunk=chunk)
            hits, kb_version = await retrieve(ctx, query, ctx.settings.retrieval_limit_per_table)
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
