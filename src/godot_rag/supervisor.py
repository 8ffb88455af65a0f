"""`godot-rag up`: the embedded stack as separate processes on loopback.

PostgreSQL and nats-server under the data folder, then the six services, each
its own process talking only over NATS and gRPC/Postgres. A service, the
nats-server or PostgreSQL that dies is restarted, within a restart budget per
time window; Ctrl-C or SIGTERM stops everything. Nothing outlives the
supervisor: the services and nats-server get SIGTERM when it dies, and a
watchdog process stops PostgreSQL (infra/embedded.py).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from godot_rag.infra.embedded import (
    EmbeddedError,
    EmbeddedNats,
    EmbeddedPostgres,
    free_port,
    start_watchdog,
)
from godot_rag.infra.embedder import embedder_from_settings
from godot_rag.infra.store import migrate_sync
from godot_rag.pipeline.kb import build_kb
from godot_rag.settings import Settings

log = logging.getLogger(__name__)

SERVICES = ("parser", "chunker", "retriever", "judge", "aggregator", "gateway")
# Stages that run Settings.workers_for(stage) processes each; the gateway stays one
# (it serves the web screen and the CLI on fixed addresses).
CHUNK_STAGES = ("parser", "chunker", "retriever", "judge", "aggregator")


# Connections beyond the service pools: the CLI, migrations, a bench's or a test's own reads.
SPARE_PG_CONNECTIONS = 20


def stage_replicas(settings: Settings) -> dict[str, int]:
    """The embedded stack's ``<stage>_replicas``: each chunk stage's processes, which share its consumer's
    MaxAckPending (Settings.process_in_flight_for)."""
    return {f"{name}_replicas": settings.workers_for(name) for name in CHUNK_STAGES}


def pg_connections_needed(settings: Settings) -> int:
    """Connections the embedded PostgreSQL must allow: every service process's pool (a retriever has a
    second one, for its searches) at its largest, and spare ones; never below PostgreSQL's default."""
    processes = sum(settings.workers_for(name) for name in CHUNK_STAGES) + 1  # + the gateway
    pools = processes + settings.workers_for("retriever")
    return max(100, pools * settings.pg_pool_size + SPARE_PG_CONNECTIONS)


# A process that dies more often than this within the window is crash-looping:
# the stack stops instead of restarting it for ever. Deaths spread over a long
# life (an outage now and then, a liveness kill) never add up to a stop.
RESTART_BUDGET = 20
RESTART_WINDOW_S = 600.0


class SupervisorError(RuntimeError):
    pass


def write_runtime_file(path: Path, runtime: dict) -> None:
    """Atomically write runtime.json, readable by this user only.

    It holds the DSN (with its password when one is configured): mode 0600 from
    the first byte; fchmod also narrows a stale .tmp left with a wider mode.
    """
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(json.dumps(runtime, indent=2))
    tmp.replace(path)


@dataclass
class RestartBudget:
    """At most ``limit`` restarts within any ``window_s`` seconds."""

    limit: int = RESTART_BUDGET
    window_s: float = RESTART_WINDOW_S
    times: deque = field(default_factory=deque)

    def spend(self, now: float) -> bool:
        """Count one restart at ``now``; False when the budget of the window is exhausted."""
        while self.times and now - self.times[0] > self.window_s:
            self.times.popleft()
        self.times.append(now)
        return len(self.times) <= self.limit


@dataclass
class Child:
    name: str  # the service ("retriever"); workers of one stage share it
    port: int
    worker: int = 1  # 1..stage_workers
    metrics_port: int = 0  # its Prometheus /metrics (chosen here: every process needs its own)
    proc: subprocess.Popen | None = None
    restarts: int = 0
    log_path: Path = field(default_factory=Path)
    budget: RestartBudget = field(default_factory=RestartBudget)

    @property
    def pid(self) -> int:
        """The running process's pid (the child was started)."""
        if self.proc is None:
            raise RuntimeError(f"{self.name} worker {self.worker} was not started")
        return self.proc.pid


# How long a service may take to answer health checks at start (imports, pool and
# NATS connections); generous, since a loaded 2-core machine starts six at once.
START_TIMEOUT_S = 120.0


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def wait_healthy(addr: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last_error = ""
    with grpc.insecure_channel(addr) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                if (
                    stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1).status
                    == health_pb2.HealthCheckResponse.SERVING
                ):
                    return
            except grpc.RpcError as exc:
                last_error = exc.code().name
            time.sleep(0.1)
    raise SupervisorError(f"{addr} not healthy after {timeout_s}s ({last_error})")


class Supervisor:
    def __init__(self, settings: Settings, echo=print):
        self.settings = settings
        self.echo = echo
        self.pg = EmbeddedPostgres(settings.data_dir) if not settings.pg_dsn else None
        self.nats = EmbeddedNats(settings.data_dir, settings.host, settings.nats_port) if not settings.nats_url else None
        self.children: dict[str, Child] = {}
        self.stopping = False
        self._lock_fh: Any = None
        self._watchdog: subprocess.Popen | None = None
        self.server_restarts: dict[str, int] = {"nats-server": 0, "postgres": 0}
        self._server_budgets = {"nats-server": RestartBudget(), "postgres": RestartBudget()}
        self._retry_at: dict[str, float] = {}
        self._start_failures: dict[str, int] = {}

    def _lock(self) -> None:
        self.settings.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fh = open(self.settings.run_dir / "up.lock", "w")
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise SupervisorError(f"another godot-rag up already runs on {self.settings.data_dir}") from exc

    def start(self) -> dict:
        self._lock()
        s = self.settings
        dsn = s.pg_dsn
        if self.pg is not None or self.nats is not None:
            # Started first: from here on, a supervisor killed at any point takes its servers with it.
            self._watchdog = start_watchdog(s.data_dir, nats=self.nats is not None, pg=self.pg is not None)
        if self.pg is not None:
            self.echo(f"starting PostgreSQL (pgvector, pg_trgm) in {self.pg.pgdata}")
            dsn = self.pg.start(max_connections=pg_connections_needed(s))
        applied = migrate_sync(dsn)
        if applied:
            self.echo(f"applied migrations: {', '.join(applied)}")
        counts = build_kb(
            dsn,
            embedder=embedder_from_settings(s),
            progress=lambda phase, done, total: self.echo(f"knowledge base: {phase} ({done}/{total})"),
        )
        if counts:
            self.echo(f"knowledge base built: {counts}")
        nats_url = s.nats_url
        if self.nats is not None:
            self.nats.start()
            nats_url = self.nats.url
            self.echo(f"nats-server (JetStream) listening on {nats_url}, store {self.nats.store_dir}")
        ports = {name: getattr(s, f"{name}_port") or free_port(s.host) for name in SERVICES}
        web_port = s.web_port or free_port(s.host)
        self.child_settings = s.with_overrides(
            pg_dsn=dsn,
            nats_url=nats_url,
            web_port=web_port,
            **{f"{n}_port": p for n, p in ports.items()},
            **stage_replicas(s),
        )
        logs = s.run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        for name in SERVICES:
            workers = s.workers_for(name) if name in CHUNK_STAGES else 1
            for worker in range(1, workers + 1):
                # Extra workers of a stage: same durable consumer (JetStream shares
                # the messages), own gRPC port; runtime.json names the first one.
                port = ports[name] if worker == 1 else free_port(s.host)
                key = name if worker == 1 else f"{name}.{worker}"
                # GODOT_RAG_METRICS_PORT is one process's port (a pod's); here every process gets a free one.
                child = Child(name, port, worker=worker, metrics_port=free_port(s.host), log_path=logs / f"{key}.log")
                self.children[key] = child
                self._spawn(child)
        for key, child in self.children.items():
            try:
                wait_healthy(f"{s.host}:{child.port}", START_TIMEOUT_S)
            except SupervisorError as exc:
                # Say why: the process's exit status and the end of its log.
                state = (
                    "running"
                    if child.proc is not None and child.proc.poll() is None
                    else f"exited with {child.proc.returncode if child.proc is not None else '?'}"
                )
                raise SupervisorError(f"{key} ({state}): {exc}; its log ends with:\n{_log_tail(child.log_path)}") from exc
            self.echo(f"{key:<12} gRPC on {s.host}:{child.port}, metrics on {self.metrics_url(child)}")
        runtime = {
            "pid": os.getpid(),
            "gateway": f"{s.host}:{ports['gateway']}",
            "web": f"http://{s.host}:{web_port}/",
            "services": {n: f"{s.host}:{p}" for n, p in ports.items()},
            # Every process's /metrics, by the same key as its log (retriever, retriever.2, ...).
            "metrics": {key: self.metrics_url(child) for key, child in self.children.items()},
            "nats_url": nats_url,
            "pg_dsn": dsn,
            "data_dir": str(s.data_dir),
        }
        write_runtime_file(s.runtime_file, runtime)
        self.echo(f"web debug screen on http://{s.host}:{web_port}/")
        self.echo(f"logs in {logs}; data in {s.data_dir}")
        return runtime

    def metrics_url(self, child: Child) -> str:
        host = self.settings.host
        return f"http://{f'[{host}]' if ':' in host else host}:{child.metrics_port}/metrics"

    def _spawn(self, child: Child) -> None:
        # A restarted child keeps its ports, so runtime.json stays true.
        # parent_pid: the service arms its own death signal on this process (infra.embedded.die_with_parent).
        overrides = {f"{child.name}_port": child.port, "metrics_port": child.metrics_port, "parent_pid": os.getpid()}
        env = {**os.environ, **self.child_settings.with_overrides(**overrides).to_env(), "PYTHONUNBUFFERED": "1"}
        fh = open(child.log_path, "ab")
        # SIGTERM to the service when the supervisor dies (even by kill -9): no orphan keeps consuming.
        child.proc = subprocess.Popen(
            [sys.executable, "-m", f"services.{child.name}"],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
        fh.close()

    def _check_servers(self) -> None:
        """Restart the embedded nats-server or PostgreSQL when it died; the services reconnect on their own."""
        if self.nats is not None and not self.nats.alive():
            self._restart_server("nats-server", self.nats.store_dir / "nats-server.log", self.nats.start)
        if self.pg is not None and not self.pg.alive():
            self._restart_server("postgres", self.pg.pgdata / "log", self._restart_pg)

    def _restart_pg(self) -> None:
        assert self.pg is not None
        dsn = self.pg.restart()
        if dsn != self.child_settings.pg_dsn:
            raise SupervisorError(f"PostgreSQL came back on {dsn}, not {self.child_settings.pg_dsn}")

    def _restart_server(self, name: str, log_path: Path, start) -> None:
        now = time.monotonic()
        if now < self._retry_at.get(name, 0.0):
            return
        self.server_restarts[name] += 1
        self.echo(f"{name} is not running; restarting (#{self.server_restarts[name]}), see {log_path}")
        if not self._server_budgets[name].spend(now):
            raise SupervisorError(f"{name} keeps dying ({RESTART_BUDGET} restarts within {RESTART_WINDOW_S:g}s); see {log_path}")
        try:
            start()
        except (EmbeddedError, subprocess.SubprocessError, OSError, AssertionError) as exc:
            # The cause may pass (a full disk freed, a port released): try again later, less often each time.
            failures = self._start_failures.get(name, 0) + 1
            self._start_failures[name] = failures
            self._retry_at[name] = now + min(30.0, 2.0**failures)
            self.echo(f"{name} did not start ({type(exc).__name__}: {exc}); next try in {min(30.0, 2.0**failures):.0f}s")
            return
        self._start_failures[name] = 0

    def watch(self, stop_flag: list[bool]) -> None:
        """Restart services and servers that die until asked to stop."""
        while not stop_flag[0]:
            if not self.stopping:
                self._check_servers()
            for child in self.children.values():
                if child.proc is not None and child.proc.poll() is not None and not self.stopping:
                    child.restarts += 1
                    self.echo(
                        f"{child.name} exited with {child.proc.returncode}; restarting (#{child.restarts}), see {child.log_path}"
                    )
                    if not child.budget.spend(time.monotonic()):
                        raise SupervisorError(
                            f"{child.name} keeps dying ({RESTART_BUDGET} restarts within "
                            f"{RESTART_WINDOW_S:g}s); see {child.log_path}"
                        )
                    self._spawn(child)
            time.sleep(0.3)

    def stop(self) -> None:
        self.stopping = True
        for child in self.children.values():
            if child.proc is not None and child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in self.children.values():
            if child.proc is None:
                continue
            try:
                child.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.proc.kill()
                child.proc.wait(5)
        if self.settings.runtime_file.exists():
            self.settings.runtime_file.unlink()
        if self.nats is not None:
            self.nats.stop()
        if self.pg is not None:
            self.pg.stop()
        if self._watchdog is not None and self._watchdog.poll() is None:
            self._watchdog.kill()
            self._watchdog.wait(5)
        if self._lock_fh is not None:
            self._lock_fh.close()


def run_up(settings: Settings, echo=print) -> int:
    sup = Supervisor(settings, echo)
    stop_flag = [False]
    started = [False]

    def on_signal(signum, frame):
        stop_flag[0] = True
        if not started[0]:
            # Still starting (initdb, knowledge base build): abort right away;
            # the finally below stops whatever already runs.
            raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        sup.start()
        started[0] = True
        echo("godot-rag is up; Ctrl-C stops it")
        sup.watch(stop_flag)
        return 0
    finally:
        echo("stopping godot-rag")
        sup.stop()
