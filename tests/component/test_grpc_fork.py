"""A process that serves and calls gRPC can fork() a child that execs (pgserver starts PostgreSQL
that way, under another user): with gRPC's fork handlers on, such children abort or segfault
before their exec, a few in every few hundred."""

from __future__ import annotations

import os
import subprocess
import sys

FORKS = 400

_SCRIPT = f"""
import os, subprocess, threading
import godot_rag  # first, as every entry point of the product imports it
import grpc
from concurrent import futures
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

server = grpc.server(futures.ThreadPoolExecutor(4))
health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
port = server.add_insecure_port("127.0.0.1:0")
server.start()
done = threading.Event()

def call():
    while not done.is_set():
        with grpc.insecure_channel(f"127.0.0.1:{{port}}") as channel:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)

callers = [threading.Thread(target=call) for _ in range(2)]
for t in callers:
    t.start()
dead = []
for _ in range({FORKS}):
    # user= makes subprocess fork() rather than vfork(), as pgserver's pg_ctl calls do.
    result = subprocess.run(["true"], user=os.getuid(), capture_output=True)
    if result.returncode != 0:
        dead.append((result.returncode, result.stderr[-200:]))
done.set()
for t in callers:
    t.join()
server.stop(None)
print("dead children:", len(dead), dead[:3])
"""


def test_children_forked_while_grpc_runs_reach_their_exec():
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "dead children: 0 " in out.stdout, out.stdout + out.stderr[-2000:]
