"""Dead letters: a message given up on is recorded, and what it was about is settled.

A dead file task fails its file and still tells the aggregator the file is
done; a dead chunk task fails the chunk's stage and still reaches the
aggregator. Either way the analysis completes, with the failure visible in the
API, the UI and the logs.

Two ways in: the bus gives up on a message whose handler failed on its last
delivery; or the worker died on every delivery (a segfault, OOM, a liveness
kill) and never reached that code, and JetStream, past MaxDeliver, drops the
message and publishes a MaxDeliver advisory. The advisories are kept in their
own stream and read by every stage service (:func:`handle_max_deliveries`):
the message is read back by its stream sequence and settled here.
Settling is idempotent (upserts; a stage already done stays done), so both
ways may meet the same message.
"""

from __future__ import annotations

import json
import logging

from google.protobuf.message import DecodeError

from godot_rag.domain.ids import message_id, replay_message_version, subject_token
from godot_rag.errors import PoisonError
from godot_rag.infra import metrics
from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.results import finalize_analysis
from godot_rag.pipeline.versions import finalize_replay
from godot_rag.stages import (
    CHUNK_STAGES,
    CONSUMERS,
    FILE_DONE,
    NEXT_STAGE,
    STAGE_VERSION,
    FileStatus,
    Stage,
    Status,
    chunk_subject,
    parse_subject,
)
from godot_rag.v1 import messages_pb2 as pb

log = logging.getLogger(__name__)


async def settle_dead_letter(ctx: ServiceContext, delivery: Delivery, error: str, stage: str = "") -> None:
    """Record the dead letter of ``delivery`` and settle what it was about; ``stage`` names the consumer (default: this service)."""
    stage = stage or ctx.name
    parsed = parse_subject(delivery.subject)
    metrics.count_dead_letter(stage)
    log.error("%s dead-lettered %s after %d deliveries: %s", stage, delivery.subject, delivery.num_delivered, error)
    await ctx.store.record_dead_letter(
        analysis_id=parsed.analysis_id if parsed else "",
        stage=stage,
        subject=delivery.subject,
        key=parsed.key if parsed else delivery.subject,
        error=error,
        deliveries=delivery.num_delivered,
    )
    if parsed is None:
        return
    try:
        if parsed.family == "file":
            await _settle_file(ctx, stage, delivery.data, error)
        elif parsed.family == "chunk" and parsed.step in CHUNK_STAGES:
            await _settle_chunk(ctx, stage, Stage(parsed.step), delivery.data, error)
        elif parsed.family == "chunk" and parsed.step == FILE_DONE:
            # A completion check that was given up on: check now, or the last file's event is lost.
            await finalize_analysis(ctx.store, pb.FileDone.FromString(delivery.data).analysis_id)
    except DecodeError:
        log.error("dead-lettered payload on %s is not a readable task; only the dead letter is recorded", delivery.subject)


async def handle_max_deliveries(ctx: ServiceContext, advisory: Delivery) -> None:
    """One MaxDeliver advisory: read the message back by its sequence, dead-letter and settle it.

    Any failure here (store or NATS down) reaches the bus and the advisory is
    delivered again (its consumer has no delivery limit), so it is never lost.
    """
    try:
        event = json.loads(advisory.data)
        stream, consumer, seq = str(event["stream"]), str(event["consumer"]), int(event["stream_seq"])
        deliveries = int(event.get("deliveries", 0))
    except (ValueError, KeyError, TypeError) as exc:
        raise PoisonError(f"unreadable MaxDeliver advisory on {advisory.subject}: {exc}") from exc
    stored = await ctx.bus.message_by_sequence(stream, seq)
    if stored is None:
        # The message is gone from the stream (deleted or aged out): the record is all that can be kept.
        await ctx.store.record_dead_letter(
            analysis_id="",
            stage=consumer,
            subject=f"{stream}#{seq}",
            key=f"{stream}#{seq}",
            error="worker died on every delivery; the message is no longer in the stream",
            deliveries=deliveries,
        )
        return
    spec = CONSUMERS.get(consumer)
    dead = Delivery(stored.subject, stored.data, stored.headers, deliveries, spec.max_deliver if spec else deliveries)
    await settle_dead_letter(ctx, dead, f"worker died on each of {deliveries} deliveries (MaxDeliver advisory)", stage=consumer)


async def _settle_file(ctx: ServiceContext, stage: str, data: bytes, error: str) -> None:
    task = pb.FileTask.FromString(data)
    source_file = task.request.source_file
    # Chunks committed before the worker died may never have been handed on: settle them as failed too.
    await ctx.store.fail_file(task.analysis_id, source_file, f"{stage}: {error}"[:2000])
    done = pb.FileDone(analysis_id=task.analysis_id, source_file=source_file, status=FileStatus.FAILED)
    await ctx.bus.publish(
        chunk_subject(FILE_DONE, task.analysis_id, subject_token(source_file)),
        done.SerializeToString(),
        message_id(task.analysis_id, source_file, FILE_DONE, STAGE_VERSION),
    )


async def _settle_chunk(ctx: ServiceContext, worker: str, stage: Stage, data: bytes, error: str) -> None:
    task = pb.ChunkTask.FromString(data)
    chunk_id = task.trace.chunk_id
    if task.HasField("replay"):
        await _settle_replayed_chunk(ctx, stage, task, data, error)
        return
    # mark_stage keeps a stage that is already done as done (the worker died after committing).
    await ctx.store.mark_stage(task.analysis_id, chunk_id, stage, Status.FAILED, error=error[:2000], worker=worker)
    if NEXT_STAGE[stage] is None:
        # The aggregator itself gave up on the chunk: nothing follows it, so the analysis is finalised here.
        await finalize_analysis(ctx.store, task.analysis_id)
    else:
        # Straight to the aggregator: a chunk that failed one stage is not worked on by the next.
        await ctx.bus.publish(
            chunk_subject(Stage.AGGREGATE, task.analysis_id, subject_token(chunk_id)),
            data,
            message_id(task.analysis_id, chunk_id, Stage.AGGREGATE, STAGE_VERSION),
        )


async def _settle_replayed_chunk(ctx: ServiceContext, stage: Stage, task: pb.ChunkTask, data: bytes, error: str) -> None:
    """A replayed chunk given up on fails the replay's stage row (the analysis's own rows stay as they were)."""
    replay_id, chunk_id = task.replay.replay_id, task.trace.chunk_id
    await ctx.store.mark_replay_stage(replay_id, chunk_id, stage, Status.FAILED, error=error[:2000])
    if NEXT_STAGE[stage] is None:
        await finalize_replay(ctx.store, replay_id)
    else:
        await ctx.bus.publish(
            chunk_subject(Stage.AGGREGATE, task.analysis_id, subject_token(chunk_id)),
            data,
            message_id(task.analysis_id, chunk_id, Stage.AGGREGATE, replay_message_version(replay_id, task.replay.run)),
        )
