"""Batched stage consumption on a real nats-server: each message of a batch keeps its own outcome, an outage
holds the whole batch without spending deliveries, and only a worker that follows a crash starts careful."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from nats.js import api

from godot_rag.errors import PoisonError, RetryableError, StoreError
from godot_rag.infra.bus import Bus, Delivery
from godot_rag.stages import JUDGE, STREAM_CHUNKS, chunk_subject
from tests.integration.bus_consumers import settled_consumer_info

SPEC = replace(JUDGE, durable="judge", ack_wait_s=1.0, max_deliver=3, max_handling_s=300)
# Where a redelivery would spoil what a test shows: long enough that a slow machine's progress acks
# (every third of it) always arrive in time.
STEADY = replace(SPEC, ack_wait_s=6.0)
# A crashed worker's message comes back after this; the careful window lasts as long.
SHORT = replace(SPEC, ack_wait_s=3.0)


async def _publish(bus: Bus, names: list[str]) -> None:
    for name in names:
        await bus.publish(chunk_subject("judge", "a1", name), name.encode(), f"a1:{name}:judge:1")


async def _run_until(bus: Bus, batch_handler, dead_letter, done: asyncio.Event, spec=STEADY, batch_size: int = 8) -> None:
    async def one(delivery: Delivery) -> None:
        raise AssertionError("a batched stage hands every message to its batch handler")

    stop = asyncio.Event()
    task = asyncio.create_task(bus.run_stage(spec, one, dead_letter, stop, batch_handler=batch_handler, batch_size=batch_size))
    try:
        await asyncio.wait_for(done.wait(), 60)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def test_each_message_of_a_batch_keeps_its_own_outcome(bus):
    await _publish(bus, ["ok1", "ok2", "poison", "later", "ok3"])
    batches: list[list[str]] = []
    handled: dict[str, list[int]] = {}
    letters: list[tuple[str, str]] = []
    done = asyncio.Event()

    async def handle(deliveries: list[Delivery]) -> list[BaseException | None]:
        batches.append([d.data.decode() for d in deliveries])
        outcomes: list[BaseException | None] = []
        for d in deliveries:
            name = d.data.decode()
            handled.setdefault(name, []).append(d.num_delivered)
            assert d.span is not None  # its own consumer span
            if name == "poison":
                outcomes.append(PoisonError("bad payload"))
            elif name == "later" and d.num_delivered == 1:
                outcomes.append(RetryableError("not yet", delay_s=0.1))
            else:
                outcomes.append(None)
        if handled.get("later", []) == [1, 2] and letters:
            done.set()
        return outcomes

    async def dead_letter(delivery: Delivery, reason: str) -> None:
        letters.append((delivery.data.decode(), reason))

    await _run_until(bus, handle, dead_letter, done)
    assert len(batches[0]) > 1  # a fresh worker takes what is there at once
    assert handled["later"] == [1, 2]  # naked alone, redelivered
    assert handled["ok1"] == handled["ok2"] == handled["ok3"] == [1]  # acked, never redelivered
    assert letters == [("poison", "poison: bad payload")]
    info = await settled_consumer_info(bus, SPEC.durable)
    assert info.num_ack_pending == 0


async def test_an_outage_met_by_one_message_holds_the_batch_and_runs_it_again(bus):
    await _publish(bus, ["m1", "m2", "m3"])
    calls: list[list[tuple[str, int]]] = []
    done = asyncio.Event()

    async def handle(deliveries: list[Delivery]) -> list[BaseException | None]:
        names = [d.data.decode() for d in deliveries]
        calls.append([(name, d.num_delivered) for name, d in zip(names, deliveries)])
        outcomes: list[BaseException | None] = [None] * len(deliveries)
        if "m2" in names and len(failed) == 0:
            failed.append(calls[-1])
            outcomes[names.index("m2")] = StoreError("database unavailable: connection refused")
        elif failed and failed[0] in calls[calls.index(failed[0]) + 1 :] and len({n for c in calls for n, _ in c}) == 3:
            done.set()
        return outcomes

    failed: list[list[tuple[str, int]]] = []

    async def dead_letter(delivery: Delivery, reason: str) -> None:
        raise AssertionError(f"an outage must not dead-letter: {reason}")

    await _run_until(bus, handle, dead_letter, done)
    assert calls.count(failed[0]) == 2  # the same batch again, in place, once the dependency answers
    assert all(n == 1 for call in calls for _, n in call)  # no delivery spent
    info = await settled_consumer_info(bus, SPEC.durable)
    assert info.num_ack_pending == 0 and info.num_redelivered == 0


async def test_a_worker_that_follows_a_crash_takes_one_message_at_a_time(bus):
    """Messages held by a worker that died (fetched, never settled) make the next worker careful: it takes
    messages alone until the AckWait has passed, so one that kills its worker dies alone."""
    await bus.js.add_consumer(
        STREAM_CHUNKS,
        api.ConsumerConfig(
            durable_name=SPEC.durable,
            ack_policy=api.AckPolicy.EXPLICIT,
            filter_subject="grag.chunk.judge.>",
            ack_wait=SHORT.ack_wait_s,
            max_deliver=3,
            max_ack_pending=SPEC.max_ack_pending,
        ),
    )
    await _publish(bus, ["held"])
    sub = await bus.js.pull_subscribe_bind(durable=SPEC.durable, stream=STREAM_CHUNKS)
    await sub.fetch(1, timeout=10)  # the dead worker's message: taken, never settled
    await _publish(bus, ["f1", "f2", "f3", "f4"])
    batches: list[list[str]] = []
    done = asyncio.Event()

    async def handle(deliveries: list[Delivery]) -> list[BaseException | None]:
        batches.append([d.data.decode() for d in deliveries])
        if sorted(n for b in batches for n in b) == ["f1", "f2", "f3", "f4", "held"]:
            done.set()
        return [None] * len(deliveries)

    async def dead_letter(delivery: Delivery, reason: str) -> None:
        raise AssertionError(reason)

    await _run_until(bus, handle, dead_letter, done, spec=SHORT)
    assert all(len(b) == 1 for b in batches)


async def test_publish_all_stores_every_message_once_and_raises_the_error_one_met(bus):
    names = [f"c{n:04d}" for n in range(600)]  # more than one window
    messages = [(chunk_subject("judge", "a2", name), name.encode(), f"a2:{name}:judge:1") for name in names]
    await bus.publish_all(messages, window=256)
    await bus.publish_all(messages[:10])  # a retry: the ids drop what was stored
    assert (await bus.js.stream_info(STREAM_CHUNKS)).state.messages == 600
    stored = await bus.message_by_sequence(STREAM_CHUNKS, 600)
    assert stored is not None and stored.data == b"c0599"
    too_large = (chunk_subject("judge", "a2", "big"), b"x" * (bus.nc.max_payload + 1), "a2:big:judge:1")
    later = (chunk_subject("judge", "a2", "after"), b"after", "a2:after:judge:1")
    with pytest.raises(PoisonError, match="larger than NATS accepts"):
        await bus.publish_all([too_large, later])
    # The other message of the call was stored all the same.
    assert (await bus.js.stream_info(STREAM_CHUNKS)).state.messages == 601


async def test_the_processes_of_a_consumer_share_its_messages_in_flight(bus):
    """Two processes of one stage, each allowed half of the consumer's MaxAckPending: neither holds more than
    its share, so both work (one that could take every message in flight left the other idle)."""
    spec = replace(STEADY, max_ack_pending=8)
    names = [f"s{n:03d}" for n in range(48)]
    await _publish(bus, names)
    held = {"a": 0, "b": 0}
    most = {"a": 0, "b": 0}
    handled: dict[str, list[str]] = {"a": [], "b": []}
    done = asyncio.Event()

    def handler_of(process: str):
        async def handle(deliveries: list[Delivery]) -> list[BaseException | None]:
            held[process] += len(deliveries)
            most[process] = max(most[process], held[process])
            await asyncio.sleep(0.05)
            held[process] -= len(deliveries)
            handled[process] += [d.data.decode() for d in deliveries]
            if len(handled["a"]) + len(handled["b"]) == len(names):
                done.set()
            return [None] * len(deliveries)

        return handle

    async def one(delivery: Delivery) -> None:
        raise AssertionError("a batched stage hands every message to its batch handler")

    async def dead_letter(delivery: Delivery, reason: str) -> None:
        raise AssertionError(reason)

    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(
            bus.run_stage(spec, one, dead_letter, stop, batch_handler=handler_of(p), batch_size=8, process_in_flight=4)
        )
        for p in ("a", "b")
    ]
    try:
        await asyncio.wait_for(done.wait(), 60)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
    assert sorted(handled["a"] + handled["b"]) == names
    assert most["a"] <= 4 and most["b"] <= 4, most
    assert handled["a"] and handled["b"], {p: len(h) for p, h in handled.items()}
    info = await settled_consumer_info(bus, spec.durable)
    assert info.config.max_ack_pending == 8  # the consumer's bound stays the whole stage's
