"""The aggregate stage: settle each chunk, and compute the verdict once every chunk is settled."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from google.protobuf.message import DecodeError

from godot_rag.errors import PoisonError
from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.store import Store
from godot_rag.pipeline.results import finalize_analysis
from godot_rag.pipeline.stage_runner import DONE, ChunkWork, Outcome, one_by_one, run_chunk_stage_batch
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
    """One aggregate message: the batch path with a batch of one, its error raised for the bus to map."""
    (outcome,) = await handle_aggregate_batch(ctx, stage, [delivery])
    if outcome is not None:
        raise outcome


async def handle_aggregate_batch(
    ctx: ServiceContext, stage: AggregateStage, deliveries: Sequence[Delivery]
) -> list[BaseException | None]:
    """``handle_aggregate`` for a batch: the chunks settled together, then each analysis (or replay)
    of the batch checked for completion once, not once per chunk."""
    outcomes: list[BaseException | None] = [None] * len(deliveries)
    chunk_at: list[int] = []
    # Which messages wait on the completion check of which analysis or replay.
    analyses: dict[str, list[int]] = {}
    replays: dict[str, list[int]] = {}
    for n, delivery in enumerate(deliveries):
        parsed = parse_subject(delivery.subject)
        try:
            if parsed is not None and parsed.step == FILE_DONE:
                analyses.setdefault(pb.FileDone.FromString(delivery.data).analysis_id, []).append(n)
                continue
            task = pb.ChunkTask.FromString(delivery.data)
        except DecodeError as exc:
            outcomes[n] = PoisonError(f"the message on {delivery.subject} cannot be decoded: {exc}")
            continue
        chunk_at.append(n)
        if task.HasField("replay"):
            replays.setdefault(task.replay.replay_id, []).append(n)
        else:
            analyses.setdefault(task.analysis_id, []).append(n)
    settled = await run_chunk_stage_batch(ctx, Stage.AGGREGATE, [deliveries[n] for n in chunk_at], stage, one_by_one(stage))
    for n, outcome in zip(chunk_at, settled):
        outcomes[n] = outcome

    async def check(finalize, key: str, waiting: list[int]) -> None:
        # For the messages settled here (one that failed comes back and checks again then).
        if any(outcomes[n] is None for n in waiting):
            await finalize(ctx.store, key)

    groups: list[tuple[Callable[[Store, str], Awaitable[object]], str, list[int]]]
    groups = [(finalize_replay, key, waiting) for key, waiting in replays.items()]
    groups += [(finalize_analysis, key, waiting) for key, waiting in analyses.items()]
    checked = await asyncio.gather(*(check(*group) for group in groups), return_exceptions=True)
    for (_, _, waiting), done in zip(groups, checked):
        if isinstance(done, BaseException):
            for n in waiting:
                if outcomes[n] is None:
                    outcomes[n] = done
    return outcomes
