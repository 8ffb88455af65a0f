"""The common life of a stage service: settings, telemetry, store, bus, gRPC server, signals."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from godot_rag.infra.auth import server_interceptors
from godot_rag.infra.bus import Bus
from godot_rag.infra.embedded import die_with_parent
from godot_rag.infra.logs import configure_logging
from godot_rag.infra.metrics import serve_metrics
from godot_rag.infra.store import Store
from godot_rag.infra.telemetry import setup_tracing
from godot_rag.settings import Settings, SettingsError

log = logging.getLogger(__name__)


def grpc_message_options(settings: Settings) -> list[tuple[str, int]]:
    """Uploaded archives and large analysis results travel in one message, up to the configured size."""
    return [
        ("grpc.max_receive_message_length", settings.grpc_max_message_bytes),
        ("grpc.max_send_message_length", settings.grpc_max_message_bytes),
    ]


def run_main(main: Coroutine[Any, Any, None], settings: Settings) -> None:
    """Run a service's main coroutine to the end on the configured event loop.

    uvloop does the loop's own work per message (socket reads and writes,
    callbacks, timers) in C: every stage handles each chunk through several
    sockets (NATS, PostgreSQL), so the loop is a visible share of a stage's CPU.
    """
    if settings.event_loop == "uvloop":
        import uvloop

        uvloop.run(main)
    else:
        asyncio.run(main)


@dataclass
class ServiceContext:
    name: str
    settings: Settings
    store: Store
    bus: Bus
    stop: asyncio.Event
    background: list[asyncio.Task] = field(default_factory=list)


async def run_service(
    name: str,
    settings: Settings,
    port: int,
    register: Callable[[grpc.aio.Server, ServiceContext], list[str]],
    start_consumers: Callable[[ServiceContext], Awaitable[list[asyncio.Task]]] | None = None,
) -> None:
    die_with_parent(settings.parent_pid)
    configure_logging(name, settings.log_level, settings.log_format)
    try:
        settings.check_listen_security()
    except SettingsError as exc:
        raise SystemExit(f"{name}: {exc}") from exc
    setup_tracing(name, settings.otlp_endpoint)
    if not settings.pg_dsn or not settings.nats_url:
        raise SystemExit(f"{name}: GODOT_RAG_PG_DSN and GODOT_RAG_NATS_URL must be set (godot-rag up sets them)")
    store = await Store.open(settings.pg_dsn, max_size=settings.pg_pool_size)
    bus = await Bus.connect(
        settings.nats_url,
        name=f"godot-rag-{name}",
        ack_wait_override_s=settings.ack_wait_s,
        max_handling_override_s=settings.max_handling_s,
        outage_patience_s=settings.outage_patience_s,
    )
    await bus.ensure_streams(settings.nats_stream_replicas, settings.stream_retention_days * 24 * 3600)
    stop = asyncio.Event()
    ctx = ServiceContext(name, settings, store, bus, stop)
    server = grpc.aio.server(options=grpc_message_options(settings), interceptors=server_interceptors(settings.auth_token))
    service_names = register(server, ctx)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection([*service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    bound = server.add_insecure_port(f"{settings.host}:{port}")
    await server.start()
    for svc in service_names:
        await health_servicer.set(svc, health_pb2.HealthCheckResponse.SERVING)
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    log.info("%s gRPC listening on %s:%d", name, settings.host, bound)
    metrics_server = await serve_metrics(settings.host, settings.metrics_port)
    log.info("%s metrics on %s", name, metrics_server.url)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks = await start_consumers(ctx) if start_consumers else []
    stop_waiter = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([stop_waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    crashed = [t for t in done if t is not stop_waiter and t.exception() is not None]
    stop.set()
    log.info("%s stopping", name)
    await health_servicer.enter_graceful_shutdown()
    await server.stop(grace=2)
    pending = [t for t in tasks if not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=10)
    for t in ctx.background:
        t.cancel()
    await asyncio.gather(*ctx.background, return_exceptions=True)
    await metrics_server.close()
    await bus.close()
    await store.close()
    log.info("%s stopped", name)
    if crashed:
        # A consumer loop that dies must take the process with it: the
        # supervisor (or Kubernetes) restarts it and JetStream redelivers.
        for t in crashed:
            log.error("%s consumer crashed", name, exc_info=t.exception())
        raise SystemExit(1)
