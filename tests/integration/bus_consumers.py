"""What the bus tests ask of a consumer on the server, shared so each rule is written once."""

from __future__ import annotations

import asyncio

from godot_rag.infra.bus import Bus
from godot_rag.stages import STREAM_CHUNKS


async def settled_consumer_info(bus: Bus, durable: str, within_s: float = 5.0):
    """The consumer's info once the acks sent at the end of a run are applied: an ack is published without a
    reply, and the server applies it to the consumer on its own schedule, so a first look may still count the
    message as pending. Past ``within_s`` the last info is returned and the test's assertion says what is wrong."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while True:
        info = await bus.js.consumer_info(STREAM_CHUNKS, durable)
        if not info.num_ack_pending or loop.time() > deadline:
            return info
        await asyncio.sleep(0.05)
