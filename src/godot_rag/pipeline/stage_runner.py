"""The one chunk-stage runner, and how every stage consumes its subjects.

Every chunk stage (retrieve, judge, aggregate) runs the same state machine
per message:

    claim the stage (skip the work if it is already done or failed)
    -> work: compute and commit the stage's result
    -> finish: mark the stage done or failed and the next stage waiting (one statement)
    -> publish the chunk to the next stage (deduplicated by message id)

A replayed chunk (``ChunkTask.replay`` set) runs the same machine on the
replay's own stage rows (``replay_chunks``): the analysis's rows stay settled,
the replay claims the stage for its new version, and its messages carry the
replay in their ids so JetStream's dedupe does not drop them.

The message is acknowledged by the bus only after this returns, so a crash at
any point redelivers it, and the redelivery either redoes uncommitted work or
only republishes. A RetryableError from the work puts the stage back to
waiting with the reason recorded, then reaches the bus (nak with delay).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from google.protobuf.message import DecodeError
from opentelemetry import trace

from godot_rag.domain.ids import message_id, replay_message_version, subject_token
from godot_rag.errors import PoisonError, RetryableError
from godot_rag.infra.bus import BatchHandler, Delivery, Handler
from godot_rag.infra.logs import log_context
from godot_rag.infra.metrics import poll_consumers
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.telemetry import current_trace_id
from godot_rag.pipeline.dead_letters import handle_max_deliveries, settle_dead_letter
from godot_rag.settings import Settings
from godot_rag.stages import DEAD_LETTER_WATCH, NEXT_STAGE, STAGE_VERSION, ConsumerSpec, Stage, Status, chunk_subject
from godot_rag.v1 import messages_pb2 as pb


def worker_name(service: str) -> str:
    """Who did the work, as recorded per chunk stage (host and process)."""
    return f"{service}@{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class ChunkWork:
    """One chunk in one stage, as the stage's work function sees it."""

    analysis_id: str
    chunk_id: str
    trace: pb.ChunkTrace
    delivery: Delivery
    replay: pb.ReplaySpec | None = None  # set when the chunk is replayed


@dataclass(frozen=True)
class Outcome:
    status: Status  # DONE or FAILED
    error: str = ""
    version: str = ""  # the result version the work wrote, if any


DONE = Outcome(Status.DONE)

StageWork = Callable[[ChunkWork], Awaitable[Outcome]]
T = TypeVar("T")
R = TypeVar("R")
# The work of many chunks at once: one Outcome, or the error that chunk met, per item and in order.
BatchWork = Callable[[Sequence[ChunkWork]], Awaitable[list["Outcome | BaseException"]]]


@contextlib.contextmanager
def item_scope(item: ChunkWork) -> Iterator[None]:
    """Within the block, spans and log records belong to this chunk's own message (one of a batch)."""
    span = item.delivery.span
    with (
        trace.use_span(span, end_on_exit=False) if span is not None else contextlib.nullcontext(),
        log_context(item.analysis_id, item.chunk_id),
    ):
        yield


async def each(items: Sequence[ChunkWork], step: Callable[[ChunkWork], Awaitable]) -> list:
    """``step`` of every item at once, each in its own scope: its result or the error it met, in order.

    The items' store calls made in the same event-loop turn go to PostgreSQL as
    one statement (infra/batching.py), so a batch costs a statement per step,
    not per chunk.
    """

    async def scoped(item: ChunkWork):
        with item_scope(item):
            return await step(item)

    return await asyncio.gather(*(scoped(item) for item in items), return_exceptions=True)


async def then(
    items: Sequence[ChunkWork], values: Sequence[T | BaseException], step: Callable[[ChunkWork, T], Awaitable[R]]
) -> list[R | BaseException]:
    """The next step of a batch: ``step(item, value)`` for every item whose last step gave a value, all at
    once and each in its own scope; an item whose last step failed keeps its error."""

    async def scoped(item: ChunkWork, value: T) -> R:
        with item_scope(item):
            return await step(item, value)

    live = [(n, item, v) for n, (item, v) in enumerate(zip(items, values)) if not isinstance(v, BaseException)]
    done = await asyncio.gather(*(scoped(item, v) for _, item, v in live), return_exceptions=True)
    # Every value that is not an error is replaced by its item's result below.
    out: list = list(values)
    for (n, _, _), result in zip(live, done):
        out[n] = result
    return out


def one_by_one(work: StageWork) -> BatchWork:
    """A stage's per-chunk work run on a batch: every chunk at once, each with its own outcome."""

    async def run(items: Sequence[ChunkWork]) -> list[Outcome | BaseException]:
        return await each(items, work)

    return run


def task_message_id(task: pb.ChunkTask, stage: str) -> str:
    """The Nats-Msg-Id of ``task`` for ``stage``: the analysis's own, or the replay's."""
    if task.HasField("replay"):
        return message_id(
            task.analysis_id, task.trace.chunk_id, stage, replay_message_version(task.replay.replay_id, task.replay.run)
        )
    return message_id(task.analysis_id, task.trace.chunk_id, stage, STAGE_VERSION)


def chunk_span_attributes(task: pb.ChunkTask) -> dict[str, str | int]:
    """The ChunkTrace as span attributes: a chunk's whole path is found in a trace viewer by any of them."""
    t = task.trace
    return {
        "godot_rag.analysis_id": task.analysis_id,
        "godot_rag.project_id": t.project_id,
        "godot_rag.source_file": t.source_file,
        "godot_rag.chunk_id": t.chunk_id,
        "godot_rag.chunk_order": t.chunk_order,
        "godot_rag.chunk_kind": t.chunk_kind,
    }


async def run_chunk_stage(ctx: ServiceContext, stage: Stage, delivery: Delivery, work: StageWork) -> Outcome | None:
    """Run ``work`` for the chunk of ``delivery`` unless this stage already settled it; hand the chunk on.

    Returns the outcome of the work, or None when the stage had already settled the chunk.
    """
    task = pb.ChunkTask.FromString(delivery.data)
    aid, chunk_id = task.analysis_id, task.trace.chunk_id
    trace.get_current_span().set_attributes(chunk_span_attributes(task))
    next_stage = NEXT_STAGE[stage]
    outcome: Outcome | None = None
    worker = worker_name(ctx.name)
    replay = task.replay if task.HasField("replay") else None
    item = ChunkWork(aid, chunk_id, task.trace, delivery, replay)
    with log_context(aid, chunk_id):
        if replay is not None:
            outcome = await _settle_replay(ctx, stage, replay.replay_id, chunk_id, worker, item, work)
        else:
            outcome = await _settle(ctx, stage, next_stage, aid, chunk_id, worker, item, work)
    # Settled now or before: the chunk goes on (a failed one too: the aggregator accounts for every chunk).
    if next_stage is not None:
        await ctx.bus.publish(
            chunk_subject(next_stage, aid, subject_token(chunk_id)), delivery.data, task_message_id(task, next_stage)
        )
    return outcome


async def run_chunk_stage_batch(
    ctx: ServiceContext, stage: Stage, deliveries: Sequence[Delivery], work: StageWork, batch_work: BatchWork | None = None
) -> list[BaseException | None]:
    """``run_chunk_stage`` for a batch of messages, step by step for all of them.

    Claims, settlements and hand-ons of the batch are made together, and the
    work runs on the whole batch (``batch_work``, else ``work`` on every chunk
    at once). Every message keeps its own outcome: None when handled, else the
    error the bus maps for that message alone. Replays (rare) take the
    one-message path after the batch.
    """
    next_stage = NEXT_STAGE[stage]
    worker = worker_name(ctx.name)
    # Per message: its chunk's work item, or the error that stops it here.
    items: list[ChunkWork | BaseException] = []
    tasks: dict[int, pb.ChunkTask] = {}
    for delivery in deliveries:
        try:
            task = pb.ChunkTask.FromString(delivery.data)
        except DecodeError as exc:
            items.append(PoisonError(f"the chunk task on {delivery.subject} cannot be decoded: {exc}"))
            continue
        if delivery.span is not None:
            delivery.span.set_attributes(chunk_span_attributes(task))
        replay = task.replay if task.HasField("replay") else None
        item = ChunkWork(task.analysis_id, task.trace.chunk_id, task.trace, delivery, replay)
        tasks[id(item)] = task
        items.append(item)
    fresh = [i for i in items if isinstance(i, ChunkWork) and i.replay is None]

    async def claim(item: ChunkWork) -> bool:
        return await ctx.store.claim_stage(item.analysis_id, item.chunk_id, stage, worker=worker, trace_id=current_trace_id())

    claims = await each(fresh, claim)
    # A chunk this stage settled before (claimed False) is only handed on.
    to_work = [item for item, won in zip(fresh, claims) if won is True]
    results = await (batch_work or one_by_one(work))(to_work)
    if len(results) != len(to_work):
        raise RuntimeError(f"{stage} batch work gave {len(results)} outcomes for {len(to_work)} chunks")

    async def wait_again(item: ChunkWork) -> None:
        error = next(r for w, r in zip(to_work, results) if w is item)
        await ctx.store.mark_stage(item.analysis_id, item.chunk_id, stage, Status.WAITING, error=str(error)[:2000], worker=worker)

    async def finish(item: ChunkWork, outcome: Outcome) -> None:
        await ctx.store.finish_stage(
            item.analysis_id, item.chunk_id, stage, outcome.status, error=outcome.error[:2000], worker=worker, next_stage=next_stage
        )

    # The retried ones go back to waiting with their reason; the others are settled.
    await each([w for w, r in zip(to_work, results) if isinstance(r, RetryableError)], wait_again)
    settled = dict(zip(map(id, to_work), await then(to_work, results, finish)))
    state: dict[int, BaseException | None] = {}
    for item, won in zip(fresh, claims):
        state[id(item)] = won if isinstance(won, BaseException) else settled.get(id(item))

    async def hand_on(item: ChunkWork, _: object) -> None:
        # Settled now or before: the chunk goes on (a failed one too: the aggregator accounts for every chunk).
        if next_stage is not None:
            await ctx.bus.publish(
                chunk_subject(next_stage, item.analysis_id, subject_token(item.chunk_id)),
                item.delivery.data,
                task_message_id(tasks[id(item)], next_stage),
            )

    handed = await then(fresh, [state[id(item)] for item in fresh], hand_on)
    outcome = {id(item): (done if isinstance(done, BaseException) else None) for item, done in zip(fresh, handed)}

    async def replay_one(item: ChunkWork) -> None:
        await run_chunk_stage(ctx, stage, item.delivery, work)

    replays = [i for i in items if isinstance(i, ChunkWork) and i.replay is not None]
    for item, done in zip(replays, await each(replays, replay_one)):
        outcome[id(item)] = done if isinstance(done, BaseException) else None
    return [item if isinstance(item, BaseException) else outcome[id(item)] for item in items]


async def _settle_replay(
    ctx: ServiceContext, stage: Stage, replay_id: str, chunk_id: str, worker: str, item: ChunkWork, work: StageWork
) -> Outcome | None:
    """The replay's claim: its own row per chunk and stage, settled once like the analysis's."""
    outcome: Outcome | None = None
    if await ctx.store.claim_replay_stage(replay_id, chunk_id, stage, worker=worker, trace_id=current_trace_id()):
        try:
            outcome = await work(item)
        except RetryableError as exc:
            await ctx.store.mark_replay_stage(replay_id, chunk_id, stage, Status.WAITING, error=str(exc)[:2000])
            raise
        await ctx.store.finish_replay_stage(
            replay_id, chunk_id, stage, outcome.status, error=outcome.error[:2000], worker=worker, result_version=outcome.version
        )
    return outcome


async def _settle(
    ctx: ServiceContext,
    stage: Stage,
    next_stage: Stage | None,
    aid: str,
    chunk_id: str,
    worker: str,
    item: ChunkWork,
    work: StageWork,
) -> Outcome | None:
    outcome: Outcome | None = None
    if await ctx.store.claim_stage(aid, chunk_id, stage, worker=worker, trace_id=current_trace_id()):
        try:
            outcome = await work(item)
        except RetryableError as exc:
            await ctx.store.mark_stage(aid, chunk_id, stage, Status.WAITING, error=str(exc)[:2000], worker=worker)
            raise
        await ctx.store.finish_stage(
            aid, chunk_id, stage, outcome.status, error=outcome.error[:2000], worker=worker, next_stage=next_stage
        )
    return outcome


log = logging.getLogger(__name__)


def with_fault_hook(settings: Settings, stage: str, handler: Handler) -> Handler:
    """The handler, or (reliability tests only, fault_hooks=1) one that kills this process on chosen messages.

    ``fault_crash_on`` = "<stage>:<text>": the process exits at once, without
    cleanup, as a segfault or an OOM kill would, on every delivery of this
    stage whose subject contains <text>.
    """
    target_stage, _, text = settings.fault_crash_on.partition(":")
    if not settings.fault_hooks or target_stage != stage or not text:
        return handler

    async def crashing(delivery: Delivery) -> None:
        if text in delivery.subject:
            log.critical("fault hook: %s exits on %s (delivery %d)", stage, delivery.subject, delivery.num_delivered)
            logging.shutdown()
            os._exit(70)
        await handler(delivery)

    return crashing


def with_batch_fault_hook(settings: Settings, stage: str, handler: BatchHandler) -> BatchHandler:
    """``with_fault_hook`` for a batch handler: the process exits when any message of the batch is chosen."""
    target_stage, _, text = settings.fault_crash_on.partition(":")
    if not settings.fault_hooks or target_stage != stage or not text:
        return handler

    async def crashing(deliveries: list[Delivery]) -> list[BaseException | None]:
        for delivery in deliveries:
            if text in delivery.subject:
                log.critical("fault hook: %s exits on %s (delivery %d)", stage, delivery.subject, delivery.num_delivered)
                logging.shutdown()
                os._exit(70)
        return await handler(deliveries)

    return crashing


def consume(ctx: ServiceContext, spec: ConsumerSpec, handler: Handler, batch_handler: BatchHandler | None = None) -> asyncio.Task:
    """Run ``handler`` on ``spec``'s subjects until the service stops; dead letters are settled, never dropped.

    The consumer's pending and ack-pending counts are read into /metrics alongside.
    Each service also reads the MaxDeliver advisories (once per process): what
    a dead worker never settled is dead-lettered by whichever service is alive.
    """
    in_flight = ctx.settings.max_ack_pending_for(spec.durable, spec.max_ack_pending)
    held = ctx.settings.process_in_flight_for(spec.durable, spec.max_ack_pending)
    ctx.background.append(
        asyncio.create_task(poll_consumers(ctx.bus.js, [(spec.stream, spec.durable)], ctx.settings.metrics_poll_s, ctx.stop))
    )
    if not any(t.get_name() == DEAD_LETTER_WATCH.durable for t in ctx.background):
        ctx.background.append(
            asyncio.create_task(
                ctx.bus.run_stage(
                    DEAD_LETTER_WATCH, partial(handle_max_deliveries, ctx), partial(settle_dead_letter, ctx), ctx.stop
                ),
                name=DEAD_LETTER_WATCH.durable,
            )
        )
    return asyncio.create_task(
        ctx.bus.run_stage(
            spec,
            with_fault_hook(ctx.settings, spec.durable, handler),
            partial(settle_dead_letter, ctx),
            ctx.stop,
            max_ack_pending=in_flight,
            process_in_flight=held,
            batch_handler=None if batch_handler is None else with_batch_fault_hook(ctx.settings, spec.durable, batch_handler),
            batch_size=ctx.settings.stage_batch_size,
        )
    )
