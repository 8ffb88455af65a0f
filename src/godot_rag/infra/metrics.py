"""Prometheus metrics of one service process, served on /metrics.

One ``Metrics`` object per process (``METRICS``), holding its own registry so
tests can build fresh ones. The stage runner calls ``observe_handled``,
``count_redelivery`` and ``count_dead_letter``; the LLM client and the
retriever call ``observe_llm`` and ``observe_kb_search``; the gateway sets
``set_analyses_by_status``. ``poll_consumers`` reads each JetStream
consumer's backlog (the same numbers KEDA scales on) into gauges, and
``serve_metrics`` serves the registry over HTTP.

Label values are bounded sets (stage names, stream/durable names, model
names, analysis statuses): never an analysis or chunk id, which would make
one time series per chunk.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

log = logging.getLogger(__name__)

PREFIX = "godot_rag"
# Handler latencies: parser/chunker take milliseconds, an LLM judgment tens of seconds.
HANDLER_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
LLM_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
SEARCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None, *, process: bool = False):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        if process:
            # CPU, memory, open files, GC and Python version of this process (process_*, python_*).
            for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
                r.register(collector)
        self.processed = Counter(
            f"{PREFIX}_stage_messages_processed", "Bus messages a stage handled and acknowledged", ["stage"], registry=r
        )
        self.failed = Counter(
            f"{PREFIX}_stage_messages_failed", "Bus messages whose handler raised (retried or dead-lettered)", ["stage"], registry=r
        )
        self.handler_seconds = Histogram(
            f"{PREFIX}_stage_handler_seconds",
            "Time a stage handler ran on one message",
            ["stage", "outcome"],
            buckets=HANDLER_BUCKETS,
            registry=r,
        )
        self.batch_messages = Histogram(
            f"{PREFIX}_stage_batch_messages",
            "Messages a batched stage handled together (GODOT_RAG_STAGE_BATCH_SIZE at most)",
            ["stage"],
            buckets=(1, 2, 4, 8, 16, 32, 64, 128),
            registry=r,
        )
        self.redeliveries = Counter(
            f"{PREFIX}_stage_redeliveries", "Messages received again (JetStream delivery count above 1)", ["stage"], registry=r
        )
        self.dead_letters = Counter(
            f"{PREFIX}_stage_dead_letters", "Messages terminated and recorded as dead letters", ["stage"], registry=r
        )
        self.consumer_pending = Gauge(
            f"{PREFIX}_consumer_pending_messages",
            "Messages of the stream not yet delivered to the durable consumer",
            ["stream", "durable"],
            registry=r,
        )
        self.consumer_ack_pending = Gauge(
            f"{PREFIX}_consumer_ack_pending_messages",
            "Messages delivered to the durable consumer and not yet acknowledged",
            ["stream", "durable"],
            registry=r,
        )
        self.consumer_redelivered = Gauge(
            f"{PREFIX}_consumer_redelivered_messages",
            "Messages of the durable consumer delivered more than once and not yet acknowledged",
            ["stream", "durable"],
            registry=r,
        )
        self.consumer_poll_errors = Counter(
            f"{PREFIX}_consumer_info_errors", "Failed reads of a JetStream consumer's info", ["stream", "durable"], registry=r
        )
        self.llm_requests = Counter(
            f"{PREFIX}_llm_requests", "Requests to the LLM server by outcome", ["model", "outcome"], registry=r
        )
        self.llm_tokens = Counter(f"{PREFIX}_llm_tokens", "Tokens reported by the LLM server", ["model", "kind"], registry=r)
        self.llm_seconds = Histogram(
            f"{PREFIX}_llm_request_seconds", "Time of one LLM request, retries excluded", ["model"], buckets=LLM_BUCKETS, registry=r
        )
        self.kb_search_seconds = Histogram(
            f"{PREFIX}_kb_search_seconds",
            "Time of one knowledge-base search (ranked over the indexes the retriever holds, or reused)",
            buckets=SEARCH_BUCKETS,
            registry=r,
        )
        self.kb_searches = Counter(
            f"{PREFIX}_kb_searches",
            "Knowledge-base searches by answer: ranked over the indexes, or reused (the same search without a vector, kept)",
            ["answer"],
            registry=r,
        )
        self.analyses = Gauge(f"{PREFIX}_analyses", "Analyses in the store by status", ["status"], registry=r)
        self._statuses_seen: set[str] = set()

    # ---------------------------------------------------------------- stage runner

    def observe_handled(self, stage: str, seconds: float, ok: bool) -> None:
        """One message handled: acknowledged (ok) or failed (nak'd, terminated)."""
        (self.processed if ok else self.failed).labels(stage).inc()
        self.handler_seconds.labels(stage, "ok" if ok else "error").observe(seconds)

    def observe_batch(self, stage: str, messages: int) -> None:
        self.batch_messages.labels(stage).observe(messages)

    def count_redelivery(self, stage: str) -> None:
        self.redeliveries.labels(stage).inc()

    def count_dead_letter(self, stage: str) -> None:
        self.dead_letters.labels(stage).inc()

    # ---------------------------------------------------------------- LLM, knowledge base, gateway

    def observe_llm(self, model: str, seconds: float, *, ok: bool, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.llm_requests.labels(model, "ok" if ok else "error").inc()
        self.llm_seconds.labels(model).observe(seconds)
        if prompt_tokens:
            self.llm_tokens.labels(model, "prompt").inc(prompt_tokens)
        if completion_tokens:
            self.llm_tokens.labels(model, "completion").inc(completion_tokens)

    def observe_kb_search(self, seconds: float, *, reused: bool = False) -> None:
        self.kb_search_seconds.observe(seconds)
        self.kb_searches.labels("reused" if reused else "ranked").inc()

    def set_analyses_by_status(self, counts: dict[str, int]) -> None:
        """Set the analyses gauge from a full count; a status that disappeared goes to 0, not stale."""
        for status in self._statuses_seen - set(counts):
            self.analyses.labels(status).set(0)
        for status, n in counts.items():
            self.analyses.labels(status).set(n)
        self._statuses_seen |= set(counts)

    # ---------------------------------------------------------------- JetStream consumers

    def set_consumer_info(self, stream: str, durable: str, info) -> None:
        """Copy one ``nats.js.api.ConsumerInfo`` into the gauges."""
        self.consumer_pending.labels(stream, durable).set(info.num_pending or 0)
        self.consumer_ack_pending.labels(stream, durable).set(info.num_ack_pending or 0)
        self.consumer_redelivered.labels(stream, durable).set(info.num_redelivered or 0)

    def render(self) -> bytes:
        return generate_latest(self.registry)


METRICS = Metrics(process=True)


def observe_handled(stage: str, seconds: float, ok: bool) -> None:
    METRICS.observe_handled(stage, seconds, ok)


def observe_batch(stage: str, messages: int) -> None:
    METRICS.observe_batch(stage, messages)


def count_redelivery(stage: str) -> None:
    METRICS.count_redelivery(stage)


def count_dead_letter(stage: str) -> None:
    METRICS.count_dead_letter(stage)


def observe_llm(model: str, seconds: float, *, ok: bool, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
    METRICS.observe_llm(model, seconds, ok=ok, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def observe_kb_search(seconds: float, *, reused: bool = False) -> None:
    METRICS.observe_kb_search(seconds, reused=reused)


def set_analyses_by_status(counts: dict[str, int]) -> None:
    METRICS.set_analyses_by_status(counts)


# How soon a consumer that could not be read (not created yet, a NATS timeout) is read again.
UNREAD_RETRY_S = 1.0


async def read_consumers(js, consumers: Iterable[tuple[str, str]], metrics: Metrics = METRICS) -> int:
    """Read each (stream, durable) consumer's info once into the gauges; returns how many were read.

    A consumer not created yet (its service has not started) or a NATS
    timeout is counted in ``consumer_info_errors`` and skipped: the gauges
    keep their last value rather than dropping to a false zero.
    """
    import nats.errors
    from nats.js.errors import NotFoundError

    read = 0
    for stream, durable in consumers:
        try:
            info = await js.consumer_info(stream, durable, timeout=5.0)
        except (TimeoutError, NotFoundError, nats.errors.Error) as exc:
            metrics.consumer_poll_errors.labels(stream, durable).inc()
            log.debug("consumer info %s/%s unavailable: %s", stream, durable, exc)
            continue
        metrics.set_consumer_info(stream, durable, info)
        read += 1
    return read


async def poll_consumers(
    js, consumers: Iterable[tuple[str, str]], every_s: float, stop: asyncio.Event, metrics: Metrics = METRICS
) -> None:
    """Read the consumers' backlog every ``every_s`` seconds until ``stop`` is set.

    A read that missed a consumer is tried again within ``UNREAD_RETRY_S``: the first read of a
    starting service comes before its consumer is created, and its gauges would otherwise be
    missing from /metrics for a whole period.
    """
    consumers = list(consumers)
    while not stop.is_set():
        read = await read_consumers(js, consumers, metrics)
        try:
            await asyncio.wait_for(stop.wait(), timeout=every_s if read == len(consumers) else min(every_s, UNREAD_RETRY_S))
        except TimeoutError:
            continue


async def poll_analyses(store, every_s: float, stop: asyncio.Event, metrics: Metrics = METRICS) -> None:
    """The gateway's analyses-by-status gauge, counted in the store every ``every_s`` seconds until ``stop``.

    ``store`` is an ``infra.store.Store`` (not imported: the store imports this module for its search timer).
    A failed count keeps the last values: a gauge must not fall to a false zero while PostgreSQL restarts.
    """
    import psycopg

    while not stop.is_set():
        try:
            metrics.set_analyses_by_status(await store.count_analyses_by_status())
        except psycopg.Error as exc:
            log.warning("counting analyses by status failed: %s", exc)
        try:
            await asyncio.wait_for(stop.wait(), timeout=every_s)
        except TimeoutError:
            continue


@dataclass
class MetricsServer:
    runner: web.AppRunner
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    async def close(self) -> None:
        await self.runner.cleanup()


async def serve_metrics(host: str, port: int, metrics: Metrics = METRICS) -> MetricsServer:
    """Serve ``GET /metrics`` on host:port (0 = a free port, read back from the socket)."""

    async def handle(_request: web.Request) -> web.Response:
        # generate_latest walks every collector; cheap next to a scrape interval.
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    # runner.addresses: the sockets actually bound, which is how port 0 becomes a number.
    return MetricsServer(runner, host, runner.addresses[0][1])
