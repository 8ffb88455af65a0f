from __future__ import annotations

import asyncio
import logging
import os
import socket

from opentelemetry import trace

from godot_rag.infra.bus import STREAM_CHUNKS, Delivery, StageSpec
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.telemetry import current_trace_id
from godot_rag.pipeline.results import outcome_rows_to_verdict
from godot_rag.v1 import messages_pb2 as pb

log = logging.getLogger(__name__)
SPEC = StageSpec(durable="aggregator", stream=STREAM_CHUNKS,
                 filter_subjects=["grag.chunk.aggregate.>", "grag.chunk.filedone.>"], ack_wait_s=30, max_ack_pending=16)
WORKER = f"aggregator@{socket.gethostname()}:{os.getpid()}"


async def start(ctx: ServiceContext) -> list[asyncio.Task]:
    async def handle(delivery: Delivery) -> None:
        if delivery.subject.startswith("grag.chunk.aggregate."):
            task = pb.ChunkTask.FromString(delivery.data)
            aid = task.analysis_id
            trace.get_current_span().set_attribute("godot_rag.chunk_id", task.trace.chunk_id)
            # A chunk whose retrieval or judgment failed is settled as failed:
            # counted, shown, never weighed into the verdict.
            earlier = [await ctx.store.stage_status(aid, task.trace.chunk_id, s) for s in ("retrieve", "judge")]
            status = "failed" if "failed" in earlier else "done"
            await ctx.store.mark_stage(aid, task.trace.chunk_id, "aggregate", status, worker=WORKER, trace_id=current_trace_id())
        else:
            aid = pb.FileDone.FromString(delivery.data).analysis_id
        verdict = await ctx.store.finalize_if_complete(aid, outcome_rows_to_verdict)
        if verdict is not None:
            log.info("analysis %s complete: %s (%.2f)", aid, verdict["label"], verdict["confidence"])

    return [asyncio.create_task(ctx.bus.run_stage(SPEC, handle, ctx.dead_letter, ctx.stop))]
