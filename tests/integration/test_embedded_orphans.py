"""Embedded servers do not outlive their supervisor, and a start stops an orphan left on its data folder."""

from __future__ import annotations

import subprocess
import sys
import time

from godot_rag.infra.embedded import EmbeddedNats, pid_alive


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
    script = ("import sys, time; from pathlib import Path; from godot_rag.infra.embedded import EmbeddedNats, start_watchdog; "
              "n = EmbeddedNats(Path(sys.argv[1]), '127.0.0.1', 0); n.start(); start_watchdog(Path(sys.argv[1]), nats=True, pg=False); "
              "print(n.proc.pid, flush=True); time.sleep(600)")
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
