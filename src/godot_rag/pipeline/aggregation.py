"""The aggregate stage: settle each chunk, and compute the verdict once every chunk is settled."""

from __future__ import annotations

from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.results import finalize_analysis
from godot_rag.pipeline.stage_runner import DONE, ChunkWork, Outcome, run_chunk_stage
from godot_rag.pipeline.versions import finalize_replay
from godot_rag.stages import FILE_DONE, Stage, Status, parse_subject
from godot_rag.v1 import messages_pb2 as pb


class AggregateStage:
    """A chunk whose retrieval or judgment failed is settled as failed: counted, shown, never weighed into the verdict."""

    def __init__(self, ctx: ServiceContext):
        self.ctx = ctx

    async def __call__(self, item: ChunkWork) -> Outcome:
        if item.replay is not None:
            rows = [
                await self.ctx.store.replay_stage_row(item.replay.replay_id, item.chunk_id, s)
                for s in (Stage.RETRIEVE, Stage.JUDGE)
            ]
            earlier = {r.stage: r.status for r in rows if r is not None}
        else:
            earlier = await self.ctx.store.stage_statuses(item.analysis_id, item.chunk_id, (Stage.RETRIEVE, Stage.JUDGE))
        failed = [stage for stage, status in earlier.items() if status == Status.FAILED]
        if failed:
            return Outcome(Status.FAILED, f"{', '.join(failed)} failed")
        return DONE


async def handle_aggregate(ctx: ServiceContext, stage: AggregateStage, delivery: Delivery) -> None:
    """An aggregate task settles its chunk; a file-done event only checks completion (files without chunks)."""
    parsed = parse_subject(delivery.subject)
    if parsed is not None and parsed.step == FILE_DONE:
        analysis_id = pb.FileDone.FromString(delivery.data).analysis_id
    else:
        await run_chunk_stage(ctx, Stage.AGGREGATE, delivery, stage)
        task = pb.ChunkTask.FromString(delivery.data)
        if task.HasField("replay"):
            # A replay finishes on its own: its version's verdict, that version made current.
            await finalize_replay(ctx.store, task.replay.replay_id)
            return
        analysis_id = task.analysis_id
    await finalize_analysis(ctx.store, analysis_id)
