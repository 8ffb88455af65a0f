"""NATS JetStream: streams, publishing with dedupe ids, durable stage consumers.

Ack only after the handler returned, i.e. after its result is committed.
Error mapping at this edge: RetryableError -> nak(delay); PoisonError, or any
failure on the last allowed delivery -> term() + dead-letter row; any other
exception -> nak with backoff and the error recorded by the stage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import nats
from nats.js import api
from nats.js.errors import NotFoundError as JsNotFound
from opentelemetry import trace

from godot_rag.errors import PoisonError, RetryableError
from godot_rag.infra import metrics
from godot_rag.infra.telemetry import extract_context, inject_headers
from godot_rag.stages import CHUNK_PREFIX, FILE_PREFIX, STREAM_CHUNKS, STREAM_FILES, ConsumerSpec, parse_subject

log = logging.getLogger(__name__)

# Long enough to cover a restart of the whole stack, so a republish after a
# crash is dropped as a duplicate instead of doing the work twice.
DEDUPE_WINDOW_S = 30 * 60
# How long a stage's messages stay in the streams: `godot-rag replay` takes a
# chunk's last message on its stage subject (a direct get) while it is kept,
# and rebuilds it from the stored chunk after that (docs/operations.md).
# The default of GODOT_RAG_STREAM_RETENTION_DAYS.
RETENTION_S = 14 * 24 * 3600


@dataclass
class Delivery:
    subject: str
    data: bytes
    headers: dict[str, str]
    num_delivered: int
    max_deliver: int
    _msg: object = field(repr=False, default=None)

    @property
    def last_attempt(self) -> bool:
        return self.num_delivered >= self.max_deliver

    async def in_progress(self) -> None:
        """Tell JetStream the work goes on, so a long step is not redelivered."""
        await self._msg.in_progress()  # type: ignore[attr-defined]


Handler = Callable[[Delivery], Awaitable[None]]
DeadLetterSink = Callable[[Delivery, str], Awaitable[None]]


class Bus:
    def __init__(self, nc: nats.NATS, ack_wait_override_s: float = 0.0):
        self.nc = nc
        self.js = nc.jetstream()
        self.ack_wait_override_s = ack_wait_override_s

    @classmethod
    async def connect(cls, url: str, name: str, ack_wait_override_s: float = 0.0) -> Bus:
        nc = await nats.connect(url, name=name, max_reconnect_attempts=-1, reconnect_time_wait=0.5, connect_timeout=5)
        return cls(nc, ack_wait_override_s)

    async def close(self) -> None:
        # Every message handled has been acked already; drain() would wait on
        # the pull subscriptions' pending fetch requests for its full timeout.
        await self.nc.close()

    async def ensure_streams(self, replicas: int = 1, retention_s: float = RETENTION_S) -> None:
        """Create or update the streams; replicas > 1 needs a JetStream cluster of that size."""
        for name, subjects in ((STREAM_FILES, [f"{FILE_PREFIX}.>"]), (STREAM_CHUNKS, [f"{CHUNK_PREFIX}.>"])):
            config = api.StreamConfig(
                name=name, subjects=subjects, storage=api.StorageType.FILE, retention=api.RetentionPolicy.LIMITS,
                max_age=retention_s, duplicate_window=DEDUPE_WINDOW_S, num_replicas=replicas,
                # Direct get answers "the last message on this subject" from any replica (replay reads it).
                allow_direct=True,
            )
            try:
                await self.js.stream_info(name)
                await self.js.update_stream(config)
            except JsNotFound:
                await self.js.add_stream(config)

    async def last_message(self, stream: str, subject: str) -> bytes | None:
        """The last message kept on ``subject`` (a direct get by subject); None once it has aged out."""
        try:
            msg = await self.js.get_last_msg(stream, subject, direct=True)
        except JsNotFound:
            return None
        except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
            # A stream created before direct get was allowed answers on the API subject only.
            try:
                msg = await self.js.get_last_msg(stream, subject)
            except JsNotFound:
                return None
        return msg.data or None

    async def publish(self, subject: str, data: bytes, msg_id: str) -> None:
        headers = inject_headers({"Nats-Msg-Id": msg_id})
        await self.js.publish(subject, data, headers=headers)

    async def run_stage(self, spec: ConsumerSpec, handler: Handler, dead_letter: DeadLetterSink, stop: asyncio.Event,
                        max_ack_pending: int = 0) -> None:
        """Consume ``spec``'s subjects until ``stop``: at most ``max_ack_pending`` handlers run at once."""
        in_flight = max_ack_pending or spec.max_ack_pending
        config = api.ConsumerConfig(
            durable_name=spec.durable, ack_policy=api.AckPolicy.EXPLICIT, ack_wait=self.ack_wait_override_s or spec.ack_wait_s,
            max_deliver=spec.max_deliver, max_ack_pending=in_flight,
            filter_subjects=list(spec.filter_subjects) if len(spec.filter_subjects) > 1 else None,
            filter_subject=spec.filter_subjects[0] if len(spec.filter_subjects) == 1 else None,
            deliver_policy=api.DeliverPolicy.ALL,
        )
        # Creating an existing durable with changed updatable fields (ack wait,
        # max deliver, max ack pending) updates it in place on the server.
        await self.js.add_consumer(spec.stream, config)
        sub = await self.js.pull_subscribe_bind(durable=spec.durable, stream=spec.stream)
        tracer = trace.get_tracer("godot_rag.bus")
        ack_wait = self.ack_wait_override_s or spec.ack_wait_s
        slots = asyncio.Semaphore(in_flight)
        pending: set[asyncio.Task] = set()

        async def process(msg) -> None:
            md = msg.metadata
            delivery = Delivery(msg.subject, msg.data, dict(msg.headers or {}), md.num_delivered, spec.max_deliver, msg)
            ctx = extract_context(delivery.headers)
            if delivery.num_delivered > 1:
                metrics.count_redelivery(spec.durable)
            started = time.perf_counter()
            ok = False
            try:
                parsed = parse_subject(msg.subject)
                attributes = {"messaging.system": "nats", "messaging.destination.name": msg.subject,
                              "messaging.operation.type": "process", "messaging.consumer.group.name": spec.durable,
                              "messaging.message.delivery_count": delivery.num_delivered}
                if parsed is not None:
                    attributes["godot_rag.analysis_id"] = parsed.analysis_id
                # While the handler runs, progress acks keep JetStream from
                # redelivering work that is slow but alive (a model load, a long
                # generation); only a dead worker's messages come back.
                async with keep_alive(msg.in_progress, every_s=max(0.5, ack_wait / 3)):
                    step = parsed.step if parsed is not None else "message"
                    with tracer.start_as_current_span(f"{spec.durable} {step}", context=ctx, kind=trace.SpanKind.CONSUMER,
                                                      attributes=attributes):
                        await handler(delivery)
                await msg.ack()
                ok = True
            except PoisonError as exc:
                await dead_letter(delivery, f"poison: {exc}")
                await msg.term()
            except RetryableError as exc:
                if delivery.last_attempt:
                    await dead_letter(delivery, f"gave up after {delivery.num_delivered} deliveries: {exc}")
                    await msg.term()
                else:
                    await msg.nak(delay=exc.delay_s * delivery.num_delivered)
            except Exception as exc:
                log.exception("stage %s failed on %s (delivery %d)", spec.durable, msg.subject, delivery.num_delivered)
                if delivery.last_attempt:
                    await dead_letter(delivery, f"gave up after {delivery.num_delivered} deliveries: {type(exc).__name__}: {exc}")
                    await msg.term()
                else:
                    await msg.nak(delay=min(30.0, 2.0 ** delivery.num_delivered))
            finally:
                metrics.observe_handled(spec.durable, time.perf_counter() - started, ok)
                slots.release()

        while not stop.is_set():
            try:
                msgs = await sub.fetch(max(1, min(in_flight, in_flight - len(pending))), timeout=1.0)
            except (TimeoutError, nats.errors.TimeoutError):
                # An empty fetch: nothing pending for this stage right now.
                continue
            except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                break
            for msg in msgs:
                await slots.acquire()
                task = asyncio.create_task(process(msg))
                pending.add(task)
                task.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


@contextlib.asynccontextmanager
async def keep_alive(progress: Callable[[], Awaitable[None]], every_s: float) -> AsyncIterator[None]:
    """Send a progress ack every ``every_s`` seconds while the body runs."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await progress()
            except (TimeoutError, nats.errors.Error) as exc:
                # A missed beat only risks a redelivery, which every stage handles idempotently.
                log.warning("progress ack failed: %s", exc)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
