"""Prometheus metrics: the registry's series move with the calls, and /metrics serves them over real HTTP."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp
import nats.errors
import pytest
from nats.js.errors import NotFoundError
from prometheus_client.parser import text_string_to_metric_families

from godot_rag.infra import metrics as m


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(metrics: m.Metrics, name: str, **labels: str) -> float:
    return samples(metrics.render().decode()).get((name, tuple(sorted(labels.items()))), 0.0)


def test_handled_messages_split_into_processed_and_failed_with_latency():
    metrics = m.Metrics()
    metrics.observe_handled("judge", 0.2, ok=True)
    metrics.observe_handled("judge", 3.0, ok=True)
    metrics.observe_handled("judge", 0.01, ok=False)
    metrics.observe_handled("parser", 0.001, ok=True)
    assert value(metrics, "godot_rag_stage_messages_processed_total", stage="judge") == 2
    assert value(metrics, "godot_rag_stage_messages_failed_total", stage="judge") == 1
    assert value(metrics, "godot_rag_stage_messages_processed_total", stage="parser") == 1
    assert value(metrics, "godot_rag_stage_handler_seconds_count", stage="judge", outcome="ok") == 2
    assert value(metrics, "godot_rag_stage_handler_seconds_sum", stage="judge", outcome="ok") == pytest.approx(3.2)
    # 0.2 s falls in the 0.25 bucket, 3.0 s does not.
    assert value(metrics, "godot_rag_stage_handler_seconds_bucket", stage="judge", outcome="ok", le="0.25") == 1
    assert value(metrics, "godot_rag_stage_handler_seconds_bucket", stage="judge", outcome="ok", le="5.0") == 2


def test_redeliveries_dead_letters_llm_search_and_analyses():
    metrics = m.Metrics()
    metrics.count_redelivery("retriever")
    metrics.count_redelivery("retriever")
    metrics.count_dead_letter("judge")
    metrics.observe_llm("Qwen/Qwen3.6-35B-A3B-FP8", 1.5, ok=True, prompt_tokens=900, completion_tokens=120)
    metrics.observe_llm("Qwen/Qwen3.6-35B-A3B-FP8", 0.3, ok=False)
    metrics.observe_kb_search(0.02)
    metrics.observe_kb_search(0.0001, reused=True)
    assert value(metrics, "godot_rag_stage_redeliveries_total", stage="retriever") == 2
    assert value(metrics, "godot_rag_stage_dead_letters_total", stage="judge") == 1
    model = "Qwen/Qwen3.6-35B-A3B-FP8"
    assert value(metrics, "godot_rag_llm_requests_total", model=model, outcome="ok") == 1
    assert value(metrics, "godot_rag_llm_requests_total", model=model, outcome="error") == 1
    assert value(metrics, "godot_rag_llm_tokens_total", model=model, kind="prompt") == 900
    assert value(metrics, "godot_rag_llm_tokens_total", model=model, kind="completion") == 120
    assert value(metrics, "godot_rag_llm_request_seconds_count", model=model) == 2
    assert value(metrics, "godot_rag_kb_search_seconds_count") == 2
    assert value(metrics, "godot_rag_kb_searches_total", answer="ranked") == 1
    assert value(metrics, "godot_rag_kb_searches_total", answer="reused") == 1

    metrics.set_analyses_by_status({"running": 2, "done": 5})
    metrics.set_analyses_by_status({"done": 7})
    # A status no longer present drops to 0 instead of keeping a stale count.
    assert value(metrics, "godot_rag_analyses", status="running") == 0
    assert value(metrics, "godot_rag_analyses", status="done") == 7


def test_module_functions_feed_the_process_registry():
    before = value(m.METRICS, "godot_rag_stage_dead_letters_total", stage="aggregator")
    m.count_dead_letter("aggregator")
    m.count_redelivery("aggregator")
    m.observe_handled("aggregator", 0.1, ok=True)
    assert value(m.METRICS, "godot_rag_stage_dead_letters_total", stage="aggregator") == before + 1
    # The process registry also reports the process itself (memory, CPU), as node-level tools expect.
    assert "process_resident_memory_bytes" in m.METRICS.render().decode()


@dataclass
class Info:
    num_pending: int
    num_ack_pending: int
    num_redelivered: int


class FakeJs:
    """Answers consumer_info like nats.js.JetStreamContext: an info, NotFoundError or a timeout.

    The real JetStream path is tested in tests/integration/test_metrics_consumers.py.
    """

    def __init__(self, answers):
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    async def consumer_info(self, stream, durable, timeout=None):
        self.calls.append((stream, durable))
        answer = self.answers[(stream, durable)]
        if isinstance(answer, BaseException):
            raise answer
        return answer


async def test_read_consumers_sets_gauges_and_keeps_the_last_value_on_errors():
    metrics = m.Metrics()
    js = FakeJs(
        {
            ("GRAG_CHUNKS", "judge"): Info(40, 16, 2),
            ("GRAG_FILES", "parser"): NotFoundError(),
            ("GRAG_CHUNKS", "retriever"): nats.errors.TimeoutError(),
        }
    )
    read = await m.read_consumers(js, [("GRAG_CHUNKS", "judge"), ("GRAG_FILES", "parser"), ("GRAG_CHUNKS", "retriever")], metrics)
    assert read == 1
    assert value(metrics, "godot_rag_consumer_pending_messages", stream="GRAG_CHUNKS", durable="judge") == 40
    assert value(metrics, "godot_rag_consumer_ack_pending_messages", stream="GRAG_CHUNKS", durable="judge") == 16
    assert value(metrics, "godot_rag_consumer_redelivered_messages", stream="GRAG_CHUNKS", durable="judge") == 2
    assert value(metrics, "godot_rag_consumer_info_errors_total", stream="GRAG_FILES", durable="parser") == 1
    assert value(metrics, "godot_rag_consumer_info_errors_total", stream="GRAG_CHUNKS", durable="retriever") == 1
    js.answers[("GRAG_CHUNKS", "judge")] = nats.errors.TimeoutError()
    await m.read_consumers(js, [("GRAG_CHUNKS", "judge")], metrics)
    assert value(metrics, "godot_rag_consumer_pending_messages", stream="GRAG_CHUNKS", durable="judge") == 40


async def test_poll_consumers_stops_when_told():
    metrics = m.Metrics()
    js = FakeJs({("GRAG_CHUNKS", "judge"): Info(3, 1, 0)})
    stop = asyncio.Event()
    task = asyncio.create_task(m.poll_consumers(js, [("GRAG_CHUNKS", "judge")], every_s=0.01, stop=stop, metrics=metrics))
    while len(js.calls) < 3:
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, timeout=5)
    assert value(metrics, "godot_rag_consumer_pending_messages", stream="GRAG_CHUNKS", durable="judge") == 3


async def test_a_consumer_not_created_yet_is_read_again_soon_not_after_a_whole_period(monkeypatch):
    monkeypatch.setattr(m, "UNREAD_RETRY_S", 0.01)
    metrics = m.Metrics()
    js = FakeJs({("GRAG_CHUNKS", "judge"): NotFoundError()})
    stop = asyncio.Event()
    task = asyncio.create_task(m.poll_consumers(js, [("GRAG_CHUNKS", "judge")], every_s=3600, stop=stop, metrics=metrics))
    while not js.calls:
        await asyncio.sleep(0.005)
    js.answers[("GRAG_CHUNKS", "judge")] = Info(7, 2, 0)  # the service's consumer now exists
    await asyncio.sleep(0.1)
    stop.set()
    await asyncio.wait_for(task, timeout=5)
    # Read again within the retry delay, then left for the (hour-long) period.
    assert len(js.calls) == 2
    assert value(metrics, "godot_rag_consumer_pending_messages", stream="GRAG_CHUNKS", durable="judge") == 7


async def test_metrics_endpoint_serves_the_registry_on_a_free_port():
    metrics = m.Metrics()
    metrics.observe_handled("chunker", 0.05, ok=True)
    server = await m.serve_metrics("127.0.0.1", 0, metrics)
    try:
        assert server.port > 0
        async with aiohttp.ClientSession() as session:
            async with session.get(server.url) as resp:
                assert resp.status == 200
                assert resp.headers["Content-Type"].startswith("text/plain; version=")
                first = samples(await resp.text())
            metrics.observe_handled("chunker", 0.05, ok=True)
            async with session.get(server.url) as resp:
                second = samples(await resp.text())
            async with session.get(server.url.replace("/metrics", "/other")) as resp:
                assert resp.status == 404
    finally:
        await server.close()
    key = ("godot_rag_stage_messages_processed_total", (("stage", "chunker"),))
    assert first[key] == 1 and second[key] == 2


def test_batch_sizes_are_a_histogram_per_stage():
    metrics = m.Metrics()
    for size in (1, 32, 20):
        metrics.observe_batch("retriever", size)
    assert value(metrics, "godot_rag_stage_batch_messages_count", stage="retriever") == 3
    assert value(metrics, "godot_rag_stage_batch_messages_sum", stage="retriever") == 53
    assert value(metrics, "godot_rag_stage_batch_messages_bucket", stage="retriever", le="16.0") == 1
