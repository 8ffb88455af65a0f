"""NATS JetStream: streams, publishing with dedupe ids, durable stage consumers.

Ack only after the handler returned, i.e. after its result is committed.
Error mapping at this edge: OutageError (PostgreSQL or NATS unreachable) ->
the message is held (progress acks) and the handler retried in place until the
dependency is back, so an outage costs no delivery; RetryableError ->
nak(delay); PoisonError, or any failure on the last allowed delivery -> term()
+ dead-letter row; any other exception (a handler past its overall cap too) ->
nak with backoff and the error recorded by the stage. When the dead letter
itself cannot be written the message is naked, not termed: it comes back, or
JetStream reports it in a MaxDeliver advisory (pipeline/dead_letters.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import nats
from nats.js import api
from nats.js.errors import NotFoundError as JsNotFound
from opentelemetry import trace

from godot_rag.errors import BusError, GodotRagError, HandlingTimeout, OutageError, PoisonError, RetryableError
from godot_rag.infra import metrics
from godot_rag.infra.telemetry import extract_context, inject_headers
from godot_rag.stages import (
    CHUNK_PREFIX,
    FILE_PREFIX,
    MAX_DELIVERIES_ADVISORY,
    STREAM_ADVISORIES,
    STREAM_CHUNKS,
    STREAM_FILES,
    ConsumerSpec,
    parse_subject,
)

log = logging.getLogger(__name__)

# Long enough to cover a restart of the whole stack, so a republish after a
# crash is dropped as a duplicate instead of doing the work twice.
DEDUPE_WINDOW_S = 30 * 60
# How long a stage's messages stay in the streams: `godot-rag replay` takes a
# chunk's last message on its stage subject (a direct get) while it is kept,
# and rebuilds it from the stored chunk after that (docs/operations.md).
# The default of GODOT_RAG_STREAM_RETENTION_DAYS.
RETENTION_S = 14 * 24 * 3600
# How many messages of a publish_all await their acks at once.
PUBLISH_WINDOW = 256


@dataclass
class Delivery:
    subject: str
    data: bytes
    headers: dict[str, str]
    num_delivered: int
    max_deliver: int
    _msg: object = field(repr=False, default=None)
    # The consumer span of this message when it is handled in a batch (each message keeps its own trace).
    span: trace.Span | None = field(repr=False, default=None)

    @property
    def last_attempt(self) -> bool:
        return 0 < self.max_deliver <= self.num_delivered

    async def in_progress(self) -> None:
        """Tell JetStream the work goes on, so a long step is not redelivered."""
        await self._msg.in_progress()  # type: ignore[attr-defined]


Handler = Callable[[Delivery], Awaitable[None]]
# A batch of deliveries handled together: one outcome per delivery, in order (None = handled, or the error to map).
BatchHandler = Callable[[list[Delivery]], Awaitable[list[BaseException | None]]]
DeadLetterSink = Callable[[Delivery, str], Awaitable[None]]


@dataclass(frozen=True)
class StoredMessage:
    """A message read back from a stream by its sequence number."""

    subject: str
    data: bytes
    headers: dict[str, str]


async def _quietly(what: str, action: Awaitable[None]) -> None:
    """An ack, nak or term that NATS did not take: the message is redelivered later, which every stage handles."""
    try:
        await action
    except (TimeoutError, nats.errors.Error) as exc:
        log.warning("%s not delivered to NATS (%s); the message will be redelivered", what, exc)


class Bus:
    def __init__(
        self,
        nc: nats.NATS,
        ack_wait_override_s: float = 0.0,
        max_handling_override_s: float = 0.0,
        outage_patience_s: float = 900.0,
    ):
        self.nc = nc
        self.js = nc.jetstream()
        self.ack_wait_override_s = ack_wait_override_s
        self.max_handling_override_s = max_handling_override_s
        self.outage_patience_s = outage_patience_s

    @classmethod
    async def connect(
        cls,
        url: str,
        name: str,
        ack_wait_override_s: float = 0.0,
        max_handling_override_s: float = 0.0,
        outage_patience_s: float = 900.0,
    ) -> Bus:
        nc = await nats.connect(url, name=name, max_reconnect_attempts=-1, reconnect_time_wait=0.5, connect_timeout=5)
        return cls(nc, ack_wait_override_s, max_handling_override_s, outage_patience_s)

    async def close(self) -> None:
        # Every message handled has been acked already; drain() would wait on
        # the pull subscriptions' pending fetch requests for its full timeout.
        await self.nc.close()

    async def ensure_streams(self, replicas: int = 1, retention_s: float = RETENTION_S) -> None:
        """Create or update the streams; replicas > 1 needs a JetStream cluster of that size."""
        for name, subjects in ((STREAM_FILES, [f"{FILE_PREFIX}.>"]), (STREAM_CHUNKS, [f"{CHUNK_PREFIX}.>"])):
            config = api.StreamConfig(
                name=name,
                subjects=subjects,
                storage=api.StorageType.FILE,
                retention=api.RetentionPolicy.LIMITS,
                max_age=retention_s,
                duplicate_window=DEDUPE_WINDOW_S,
                num_replicas=replicas,
                # Direct get answers "the last message on this subject" from any replica (replay reads it).
                allow_direct=True,
            )
            await self._put_stream(config)
        # The MaxDeliver advisories of the two streams' consumers, kept until handled.
        await self._put_stream(
            api.StreamConfig(
                name=STREAM_ADVISORIES,
                subjects=[f"{MAX_DELIVERIES_ADVISORY}.{STREAM_FILES}.*", f"{MAX_DELIVERIES_ADVISORY}.{STREAM_CHUNKS}.*"],
                storage=api.StorageType.FILE,
                retention=api.RetentionPolicy.LIMITS,
                max_age=RETENTION_S,
                num_replicas=replicas,
            )
        )

    async def _put_stream(self, config: api.StreamConfig) -> None:
        try:
            await self.js.stream_info(config.name or "")
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
        try:
            await self.js.publish(subject, data, headers=headers)
        except nats.errors.MaxPayloadError as exc:
            raise PoisonError(f"message on {subject} is larger than NATS accepts: {exc}") from exc
        except (TimeoutError, nats.errors.Error) as exc:
            # Disconnected, reconnecting, or no JetStream answer in time: an outage, waited out by the consumer.
            raise BusError(f"NATS did not take the publish on {subject}: {type(exc).__name__}: {exc}") from exc

    async def publish_all(self, messages: Iterable[tuple[str, bytes, str]], window: int = PUBLISH_WINDOW) -> None:
        """``publish`` of every (subject, data, msg_id), up to ``window`` of them awaiting their acks at once.

        One after the other, every message is a socket write and a wait for its ack; published together they
        leave in one write and their acks come back together. Every message is tried; the first error met is
        raised after all of them settled (a retry republishes the lot, the ids drop what was stored).
        """
        first_error: BaseException | None = None
        batch: list[tuple[str, bytes, str]] = []

        async def send() -> None:
            nonlocal first_error
            results = await asyncio.gather(*(self.publish(*m) for m in batch), return_exceptions=True)
            batch.clear()
            first_error = first_error or next((r for r in results if isinstance(r, BaseException)), None)

        for message in messages:
            batch.append(message)
            if len(batch) >= window:
                await send()
        if batch:
            await send()
        if first_error is not None:
            raise first_error

    async def message_by_sequence(self, stream: str, seq: int) -> StoredMessage | None:
        """The message stored at ``seq`` in ``stream``; None when it is gone (deleted, aged out)."""
        try:
            raw = await self.js.get_msg(stream, seq=seq)
        except JsNotFound:
            return None
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"NATS could not read {stream} message {seq}: {exc}") from exc
        return StoredMessage(raw.subject or "", raw.data or b"", dict(raw.headers or {}))

    async def run_stage(
        self,
        spec: ConsumerSpec,
        handler: Handler,
        dead_letter: DeadLetterSink,
        stop: asyncio.Event,
        max_ack_pending: int = 0,
        batch_handler: BatchHandler | None = None,
        batch_size: int = 1,
        process_in_flight: int = 0,
    ) -> None:
        """Consume ``spec``'s subjects until ``stop``: at most ``max_ack_pending`` messages are in flight across
        every process of the consumer, and at most ``process_in_flight`` (default: all of them) in this one.

        With ``batch_handler`` and ``batch_size`` > 1, the messages of a fetch are
        handed over in batches of up to ``batch_size``, so a stage does its
        statements and model calls once per batch; each message still has its
        own span, outcome, ack, nak or dead letter. ``handler`` takes a message
        alone.
        """
        consumer_in_flight = max_ack_pending or spec.max_ack_pending
        in_flight = min(process_in_flight or consumer_in_flight, consumer_in_flight)
        batched = batch_handler is not None and batch_size > 1
        config = api.ConsumerConfig(
            durable_name=spec.durable,
            ack_policy=api.AckPolicy.EXPLICIT,
            ack_wait=self.ack_wait_override_s or spec.ack_wait_s,
            max_deliver=spec.max_deliver,
            max_ack_pending=consumer_in_flight,
            filter_subjects=list(spec.filter_subjects) if len(spec.filter_subjects) > 1 else None,
            filter_subject=spec.filter_subjects[0] if len(spec.filter_subjects) == 1 else None,
            deliver_policy=api.DeliverPolicy.ALL,
        )
        # Creating an existing durable with changed updatable fields (ack wait,
        # max deliver, max ack pending) updates it in place on the server.
        consumer = await self.js.add_consumer(spec.stream, config)
        sub = await self.js.pull_subscribe_bind(durable=spec.durable, stream=spec.stream)
        tracer = trace.get_tracer("godot_rag.bus")
        ack_wait = self.ack_wait_override_s or spec.ack_wait_s
        slots = _CountedSlots(in_flight)
        pending: set[asyncio.Task] = set()

        max_handling = self.max_handling_override_s or spec.max_handling_s

        async def through_outages(attempt: Callable[[], Awaitable[list[BaseException | None]]], held: str) -> list:
            """``attempt`` (one message's handler or a batch's) under the overall cap; an outage, raised or met
            by any message of a batch, is waited out in place with every message held, then all run again
            (each stage's work is idempotent)."""
            outage_since = time.monotonic()
            pause = 1.0
            while True:
                cap = asyncio.timeout(max_handling)
                try:
                    async with cap:
                        outcomes = await attempt()
                except TimeoutError as exc:
                    if cap.expired():
                        raise HandlingTimeout(f"{spec.durable} handler ran past its {max_handling:g}s cap") from exc
                    raise
                except OutageError as exc:
                    outage = exc
                else:
                    found = next((o for o in outcomes if isinstance(o, OutageError)), None)
                    if found is None:
                        return outcomes
                    outage = found
                if stop.is_set() or time.monotonic() - outage_since + pause > self.outage_patience_s:
                    raise outage
                log.warning("%s waits for a dependency (%s held): %s (retry in %.0fs)", spec.durable, held, outage, pause)
                await asyncio.sleep(pause)
                pause = min(30.0, pause * 2)

        async def run_handler(delivery: Delivery, ctx, attributes: dict, step: str) -> None:
            async def attempt() -> list[BaseException | None]:
                with tracer.start_as_current_span(
                    f"{spec.durable} {step}", context=ctx, kind=trace.SpanKind.CONSUMER, attributes=attributes
                ):
                    await handler(delivery)
                return [None]

            await through_outages(attempt, delivery.subject)

        async def give_up(delivery: Delivery, msg, reason: str) -> None:
            try:
                await dead_letter(delivery, reason)
            except (GodotRagError, TimeoutError, nats.errors.Error) as exc:
                # Never term what is not recorded: naked, it comes back, or (past
                # MaxDeliver) JetStream reports it in an advisory that is handled later.
                log.error("dead letter of %s not written (%s); the message is kept", delivery.subject, exc)
                await _quietly("nak", msg.nak(delay=5.0))
                return
            await _quietly("term", msg.term())

        def delivery_of(msg) -> Delivery:
            delivery = Delivery(msg.subject, msg.data, dict(msg.headers or {}), msg.metadata.num_delivered, spec.max_deliver, msg)
            if delivery.num_delivered > 1:
                metrics.count_redelivery(spec.durable)
            return delivery

        def span_attributes(delivery: Delivery) -> tuple[dict, str]:
            parsed = parse_subject(delivery.subject)
            attributes: dict = {
                "messaging.system": "nats",
                "messaging.destination.name": delivery.subject,
                "messaging.operation.type": "process",
                "messaging.consumer.group.name": spec.durable,
                "messaging.message.delivery_count": delivery.num_delivered,
            }
            if parsed is not None:
                attributes["godot_rag.analysis_id"] = parsed.analysis_id
            return attributes, parsed.step if parsed is not None else "message"

        async def settle_failure(delivery: Delivery, msg, exc: BaseException) -> None:
            """The one mapping of a handler's error to what JetStream is told about its message."""
            if isinstance(exc, PoisonError):
                await give_up(delivery, msg, f"poison: {exc}")
            elif isinstance(exc, RetryableError):
                if delivery.last_attempt:
                    await give_up(delivery, msg, f"gave up after {delivery.num_delivered} deliveries: {exc}")
                else:
                    await _quietly("nak", msg.nak(delay=exc.delay_s * delivery.num_delivered))
            else:
                log.error(
                    "stage %s failed on %s (delivery %d)",
                    spec.durable,
                    msg.subject,
                    delivery.num_delivered,
                    exc_info=(type(exc), exc, exc.__traceback__),
                )
                if delivery.last_attempt:
                    await give_up(delivery, msg, f"gave up after {delivery.num_delivered} deliveries: {type(exc).__name__}: {exc}")
                else:
                    await _quietly("nak", msg.nak(delay=min(30.0, 2.0**delivery.num_delivered)))

        async def process(msg) -> None:
            delivery = delivery_of(msg)
            ctx = extract_context(delivery.headers)
            started = time.perf_counter()
            ok = False
            try:
                attributes, step = span_attributes(delivery)
                # While the handler runs, progress acks keep JetStream from
                # redelivering work that is slow but alive (a model load, a long
                # generation); only a dead worker's messages come back. The
                # handler's cap bounds how long they go on.
                async with keep_alive(msg.in_progress, every_s=max(0.5, ack_wait / 3)):
                    await run_handler(delivery, ctx, attributes, step)
                await _quietly("ack", msg.ack())
                ok = True
            except Exception as exc:  # noqa: BLE001 -- mapped to ack/nak/term in one place
                await settle_failure(delivery, msg, exc)
            finally:
                metrics.observe_handled(spec.durable, time.perf_counter() - started, ok)
                slots.release()

        async def run_batch(deliveries: list[Delivery]) -> list[BaseException | None]:
            assert batch_handler is not None
            return await through_outages(lambda: batch_handler(deliveries), f"{len(deliveries)} messages")

        async def process_batch(msgs: list) -> None:
            metrics.observe_batch(spec.durable, len(msgs))
            deliveries = [delivery_of(m) for m in msgs]
            for delivery in deliveries:
                attributes, step = span_attributes(delivery)
                delivery.span = tracer.start_span(
                    f"{spec.durable} {step}",
                    context=extract_context(delivery.headers),
                    kind=trace.SpanKind.CONSUMER,
                    attributes=attributes,
                )
            started = time.perf_counter()
            outcomes: list[BaseException | None]
            try:

                async def beat() -> None:
                    await asyncio.gather(*(m.in_progress() for m in msgs))

                async with keep_alive(beat, every_s=max(0.5, ack_wait / 3)):
                    outcomes = await run_batch(deliveries)
            except Exception as exc:  # noqa: BLE001 -- the batch as a whole failed: every message gets the error
                outcomes = [exc] * len(deliveries)
            elapsed = time.perf_counter() - started
            for msg, delivery, outcome in zip(msgs, deliveries, outcomes):
                try:
                    if outcome is None:
                        await _quietly("ack", msg.ack())
                    else:
                        assert delivery.span is not None
                        delivery.span.record_exception(outcome)
                        delivery.span.set_status(trace.StatusCode.ERROR, f"{type(outcome).__name__}: {outcome}")
                        await settle_failure(delivery, msg, outcome)
                finally:
                    if delivery.span is not None:
                        delivery.span.end()
                    metrics.observe_handled(spec.durable, elapsed, outcome is None)
                    slots.release()

        # Isolation after a crash: a worker that died took every message it held
        # with it, and each of them comes back one delivery closer to MaxDeliver.
        # So a restarted worker, and one that sees a redelivery, takes one
        # message at a time for a while: a message that kills its worker on every
        # delivery then dies alone, and the ones that were beside it are not
        # dropped with it. A worker that starts while no message of its consumer
        # is held anywhere follows no crash, and takes full fetches at once.
        careful_until = time.monotonic() + ack_wait if (consumer.num_ack_pending or 0) > 0 else 0.0
        while not stop.is_set():
            careful = time.monotonic() < careful_until
            if careful and pending:
                await asyncio.wait(set(pending))
            try:
                msgs = await fetch_ready(sub, 1 if careful else max(1, in_flight - slots.held))
            except (TimeoutError, nats.errors.TimeoutError):
                # An empty fetch: nothing pending for this stage right now.
                continue
            except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                break
            except nats.errors.Error as exc:
                # NATS restarting or reconnecting: the durable consumer keeps its
                # place on the server; fetch again once the connection is back.
                log.warning("%s: fetch failed (%s); retrying", spec.durable, exc)
                await asyncio.sleep(1.0)
                continue
            if batched and not careful and len(msgs) < min(batch_size, in_flight - slots.held):
                msgs += await gather_more(sub, min(batch_size, in_flight - slots.held) - len(msgs))
            redelivered = [m for m in msgs if m.metadata.num_delivered > 1]
            if redelivered:
                careful_until = time.monotonic() + 2 * ack_wait
            fresh = [m for m in msgs if m not in redelivered]
            for start in range(0, len(fresh), batch_size if batched else 1):
                group = fresh[start : start + (batch_size if batched else 1)]
                for _ in group:
                    await slots.acquire()
                task = asyncio.create_task(process_batch(group) if batched else process(group[0]))
                pending.add(task)
                task.add_done_callback(pending.discard)
            for msg in redelivered:
                # Alone: nothing else of this process runs while a redelivery is handled.
                if pending:
                    await asyncio.wait(set(pending))
                await slots.acquire()
                await (process_batch([msg]) if batched else process(msg))
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


# How long a fetch that finds no message waits for the first one.
FETCH_WAIT_S = 1.0
# How long a fetch waits for the messages that are ready: an answer, not a wait for new ones.
READY_WAIT_S = 0.05


async def fetch_ready(sub, wanted: int) -> list:
    """Up to ``wanted`` messages, handed over as soon as there is one.

    nats-py's ``fetch(n)`` that finds no message ready sends a pull request for ``n`` and keeps the
    messages it gets until it has ``n`` or its timeout passes. The processes of one stage share the
    consumer's MaxAckPending, so while the others held it, such a fetch was handed messages one by
    one as they acked theirs and sat on them for the whole timeout, holding their slots too: three
    retrievers on two cores ran at 60 chunks/s with the cores half idle. So the messages that are
    ready are taken at once, and when there are none the wait is for the first one only.
    """
    if wanted > 1:
        try:
            return list(await sub.fetch(wanted, timeout=READY_WAIT_S))
        except (TimeoutError, nats.errors.TimeoutError):
            pass
    return list(await sub.fetch(1, timeout=FETCH_WAIT_S))


# How long a batched stage waits for more messages when a fetch brought fewer than a batch: an
# upstream stage hands its batch on in a burst, and a few milliseconds take the rest of it.
BATCH_LINGER_S = 0.01


async def gather_more(sub, wanted: int) -> list:
    """Up to ``wanted`` more messages that arrive within the linger (none is fine)."""
    await asyncio.sleep(BATCH_LINGER_S)
    try:
        return list(await sub.fetch(wanted, timeout=BATCH_LINGER_S))
    except (TimeoutError, nats.errors.TimeoutError):
        return []
    except nats.errors.Error as exc:
        # The next fetch meets the same trouble and handles it; these messages go on now.
        log.debug("linger fetch failed: %s", exc)
        return []


class _CountedSlots:
    """A semaphore of messages in flight that also says how many are held (what the next fetch may take)."""

    def __init__(self, size: int):
        self._semaphore = asyncio.Semaphore(size)
        self.held = 0

    async def acquire(self) -> None:
        await self._semaphore.acquire()
        self.held += 1

    def release(self) -> None:
        self.held -= 1
        self._semaphore.release()


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
