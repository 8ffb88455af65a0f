"""The bus edge under faults, on a real nats-server: hung handlers, outages, dead letters that cannot be written,
and the MaxDeliver advisories of a worker that dies on every delivery."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

from nats.js import api

from godot_rag.errors import PoisonError, StoreError
from godot_rag.infra.bus import Bus, Delivery
from godot_rag.stages import JUDGE, STREAM_ADVISORIES, STREAM_CHUNKS, chunk_subject
from tests.integration.bus_consumers import settled_consumer_info

# A short-fused copy of the judge's consumer: redeliveries within seconds.
SPEC = replace(JUDGE, durable="judge", ack_wait_s=1.0, max_deliver=3, max_handling_s=300)


async def _run_until(bus: Bus, spec, handler, dead_letter, done: asyncio.Event, timeout_s: float = 60) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(bus.run_stage(spec, handler, dead_letter, stop))
    try:
        await asyncio.wait_for(done.wait(), timeout_s)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def test_a_hung_handler_is_cancelled_at_its_cap_and_dead_lettered_on_the_last_delivery(bus):
    spec = replace(SPEC, max_deliver=2)
    capped = Bus(bus.nc, max_handling_override_s=1.5)
    await capped.publish(chunk_subject("judge", "a1", "hung"), b"task", "a1:hung:judge:1")
    seen: list[int] = []
    letters: list[tuple[Delivery, str]] = []
    done = asyncio.Event()

    async def hang(delivery: Delivery) -> None:
        seen.append(delivery.num_delivered)
        await asyncio.sleep(3600)

    async def dead_letter(delivery: Delivery, reason: str) -> None:
        letters.append((delivery, reason))
        done.set()

    await _run_until(capped, spec, hang, dead_letter, done)
    assert seen == [1, 2]  # progress acks did not hold it forever: naked at the cap, redelivered, then given up
    assert len(letters) == 1 and "cap" in letters[0][1] and letters[0][0].num_delivered == 2


async def test_an_outage_is_waited_out_without_spending_deliveries(bus):
    await bus.publish(chunk_subject("judge", "a1", "outage"), b"task", "a1:outage:judge:1")
    calls: list[int] = []
    done = asyncio.Event()

    async def flaky(delivery: Delivery) -> None:
        calls.append(delivery.num_delivered)
        if len(calls) < 3:
            raise StoreError("database unavailable: connection refused")
        done.set()

    async def dead_letter(delivery: Delivery, reason: str) -> None:
        raise AssertionError(f"an outage must not dead-letter: {reason}")

    await _run_until(bus, SPEC, flaky, dead_letter, done)
    assert calls == [1, 1, 1]  # retried in place while held, one delivery
    info = await settled_consumer_info(bus, SPEC.durable)
    assert info.num_ack_pending == 0 and info.num_redelivered == 0


async def test_a_dead_letter_that_cannot_be_written_keeps_the_message(bus):
    await bus.publish(chunk_subject("judge", "a1", "poison"), b"task", "a1:poison:judge:1")
    attempts: list[int] = []
    written: list[str] = []
    done = asyncio.Event()

    async def poison(delivery: Delivery) -> None:
        raise PoisonError("bad payload")

    async def dead_letter(delivery: Delivery, reason: str) -> None:
        attempts.append(delivery.num_delivered)
        if len(attempts) == 1:
            raise StoreError("database unavailable: disk full")
        written.append(reason)
        done.set()

    await _run_until(bus, SPEC, poison, dead_letter, done)
    assert attempts == [1, 2]  # naked, not termed, when the record failed; recorded on the next delivery
    assert written == ["poison: bad payload"]


async def test_a_worker_dying_on_every_delivery_leaves_a_max_deliver_advisory_naming_the_message(bus):
    """No handler ever returns (the process 'dies' before it can ack, nak or dead-letter): JetStream gives up after
    MaxDeliver and the advisory, kept in its stream, leads back to the very message."""
    await bus.js.add_consumer(
        STREAM_CHUNKS,
        api.ConsumerConfig(
            durable_name=SPEC.durable,
            ack_policy=api.AckPolicy.EXPLICIT,
            filter_subject="grag.chunk.judge.>",
            ack_wait=1,
            max_deliver=2,
        ),
    )
    await bus.publish(chunk_subject("judge", "a1", "crash"), b"the task", "a1:crash:judge:1")
    sub = await bus.js.pull_subscribe_bind(durable=SPEC.durable, stream=STREAM_CHUNKS)
    for _ in range(2):
        await sub.fetch(1, timeout=10)  # taken and never settled, as by a worker killed mid-handler
    for _ in range(20):
        try:
            await sub.fetch(1, timeout=1)  # a live worker keeps asking; the server then gives up on the message
        except TimeoutError:
            pass
        if (await bus.js.stream_info(STREAM_ADVISORIES)).state.messages:
            break
    advisory = await bus.js.get_msg(STREAM_ADVISORIES, seq=1)
    event = json.loads(advisory.data)
    assert (event["stream"], event["consumer"], event["deliveries"]) == (STREAM_CHUNKS, "judge", 2)
    stored = await bus.message_by_sequence(event["stream"], event["stream_seq"])
    assert stored is not None and stored.subject == chunk_subject("judge", "a1", "crash") and stored.data == b"the task"
