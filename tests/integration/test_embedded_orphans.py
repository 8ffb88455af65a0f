"""Embedded servers do not outlive their supervisor, and a start stops an orphan left on its data folder."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from godot_rag.infra.embedded import EmbeddedNats, EmbeddedPostgres, pid_alive, stop_pid


def _wait_dead(pid: int, timeout_s: float = 20) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_a_start_stops_the_nats_server_left_running_on_its_store(tmp_path):
    orphan = EmbeddedNats(tmp_path, "127.0.0.1", 0)
    orphan.start()
    left = orphan.proc.pid
    fresh = EmbeddedNats(tmp_path, "127.0.0.1", 0)  # a new supervisor on the same data folder
    try:
        fresh.start()
        assert _wait_dead(left), "two nats-servers on one JetStream store"
        assert fresh.alive() and fresh.proc.pid != left
    finally:
        fresh.stop()
        orphan.stop()


def test_nats_server_dies_with_the_process_that_started_it(tmp_path):
    # A stand-in supervisor: starts the embedded nats-server and the watchdog as `godot-rag up` does,
    # prints the server's pid, and is killed with -9.
    script = (
        "import sys, time; from pathlib import Path; from godot_rag.infra.embedded import EmbeddedNats, start_watchdog; "
        "n = EmbeddedNats(Path(sys.argv[1]), '127.0.0.1', 0); n.start(); start_watchdog(Path(sys.argv[1]), nats=True, pg=False); "
        "print(n.proc.pid, flush=True); time.sleep(600)"
    )
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        server = int(parent.stdout.readline())
        assert pid_alive(server)
        parent.kill()
        parent.wait(10)
        assert _wait_dead(server), "nats-server outlived its supervisor"
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_start_adopts_the_postgres_left_running_by_a_killed_supervisor_and_stops_it_cleanly():
    # PostgreSQL runs as the 'pgserver' user under root: the data folder must be reachable by it.
    data_dir = Path(tempfile.mkdtemp(prefix="godot-rag-pg-orphan-"))
    data_dir.chmod(0o755)
    # A stand-in supervisor without its watchdog (as when both were killed with -9): starts PostgreSQL,
    # writes a row, prints the server's pid, and is killed, leaving the server running on the data folder.
    script = (
        "import sys, time, psycopg; from pathlib import Path; from godot_rag.infra.embedded import EmbeddedPostgres; "
        "p = EmbeddedPostgres(Path(sys.argv[1])); uri = p.start(); "
        "c = psycopg.connect(uri, autocommit=True); c.execute('create table left_behind (n int)'); "
        "c.execute('insert into left_behind values (42)'); c.close(); "
        "print(p.postmaster_pid(), flush=True); time.sleep(600)"
    )
    parent = subprocess.Popen([sys.executable, "-c", script, str(data_dir)], stdout=subprocess.PIPE, text=True)
    fresh = EmbeddedPostgres(data_dir)
    orphan = None
    try:
        orphan = int(parent.stdout.readline())
        parent.kill()
        parent.wait(10)
        assert pid_alive(orphan), "the stand-in left no server behind: nothing to adopt"
        uri = fresh.start()
        assert fresh.postmaster_pid() == orphan, "a second PostgreSQL on one data folder instead of the running one"
        with psycopg.connect(uri) as conn:
            assert conn.execute("select n from left_behind").fetchall() == [(42,)]
        fresh.stop()
        assert _wait_dead(orphan), "the adopted PostgreSQL outlived the stop of the supervisor that adopted it"
        # A clean shutdown removes postmaster.pid (a killed server leaves it, and the next start recovers).
        assert not (data_dir / "pg" / "postmaster.pid").exists()
        assert "database system is shut down" in (data_dir / "pg" / "log").read_text(errors="replace")
    finally:
        if parent.poll() is None:
            parent.kill()
        if orphan is not None and pid_alive(orphan):
            stop_pid(orphan, signal.SIGINT, timeout_s=30)
        shutil.rmtree(data_dir, ignore_errors=True)


def test_postgres_is_restarted_once_to_allow_the_connections_the_stack_needs():
    data_dir = Path(tempfile.mkdtemp(prefix="godot-rag-pg-connections-"))
    data_dir.chmod(0o755)
    first = EmbeddedPostgres(data_dir)
    try:
        uri = first.start(max_connections=180)
        with psycopg.connect(uri) as conn:
            assert conn.execute("show max_connections").fetchone() == ("180",)
        pid = first.postmaster_pid()
        assert first.start(max_connections=120) == uri and first.postmaster_pid() == pid  # enough already: no restart
        first.stop()
        again = EmbeddedPostgres(data_dir)
        with psycopg.connect(again.start()) as conn:  # kept in the data folder
            assert conn.execute("show max_connections").fetchone() == ("180",)
        again.stop()
    finally:
        for server in (first, EmbeddedPostgres(data_dir)):
            pid = server.postmaster_pid()
            if pid is not None:
                stop_pid(pid, signal.SIGINT, timeout_s=30)
        shutil.rmtree(data_dir, ignore_errors=True)


def test_a_new_data_folder_whose_initdb_died_is_made_again(monkeypatch):
    import pgserver

    data_dir = Path(tempfile.mkdtemp(prefix="godot-rag-pg-initdb-"))
    data_dir.chmod(0o755)
    real = pgserver.get_server
    calls: list[Path] = []

    def crashing_once(pgdata, **kwargs):
        calls.append(Path(pgdata))
        if len(calls) == 1:
            (Path(pgdata) / "PG_VERSION").write_text("18\n")  # what a half-made folder may hold
            raise subprocess.CalledProcessError(-11, ["initdb"])
        return real(pgdata, **kwargs)

    monkeypatch.setattr(pgserver, "get_server", crashing_once)
    server = EmbeddedPostgres(data_dir)
    try:
        with psycopg.connect(server.start()) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        assert len(calls) == 2
        server.stop()
        # A folder that held a cluster is never wiped: its failure is raised.
        monkeypatch.setattr(
            pgserver, "get_server", lambda pgdata, **kw: (_ for _ in ()).throw(subprocess.CalledProcessError(1, ["pg_ctl"]))
        )
        try:
            EmbeddedPostgres(data_dir).start()
            raise AssertionError("the failure of an existing cluster was hidden")
        except subprocess.CalledProcessError:
            pass
        assert (data_dir / "pg" / "PG_VERSION").exists()
    finally:
        pid = EmbeddedPostgres(data_dir).postmaster_pid()
        if pid is not None:
            stop_pid(pid, signal.SIGINT, timeout_s=30)
        shutil.rmtree(data_dir, ignore_errors=True)
