"""Interruption and resume (seed 000): kill a service, or the whole stack, mid-run;
starting again finishes the analysis without redoing finished chunks and
without duplicate judgments."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import grpc
import psycopg
from psycopg.rows import dict_row

from godot_rag.cli import DEFAULT_PROMPT
from godot_rag.settings import load_settings
from godot_rag.supervisor import Supervisor
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


def _sql(dsn: str, query: str, params=()) -> list[dict]:
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return conn.execute(query, params).fetchall()


def _wait_until(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _check_complete(dsn: str, aid: str) -> None:
    rows = _sql(
        dsn,
        "select c.chunk_id, (select count(*) from godot_rag.judgments j where j.analysis_id = c.analysis_id "
        "and j.chunk_id = c.chunk_id) as n from godot_rag.chunks c where c.analysis_id = %s",
        (aid,),
    )
    assert rows and all(r["n"] == 1 for r in rows), rows
    stages = _sql(dsn, "select stage, status, attempts from godot_rag.chunk_stages where analysis_id = %s", (aid,))
    assert all(s["status"] == "done" for s in stages), [s for s in stages if s["status"] != "done"]
    # Chunks retrieved before the interruption were not retrieved again.
    assert all(s["attempts"] == 1 for s in stages if s["stage"] == "retrieve"), stages


def test_killed_judge_is_restarted_and_the_analysis_completes(repo: Path):
    data_dir = Path(tempfile.mkdtemp(prefix="godot-rag-resume-"))
    data_dir.chmod(0o755)
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(data_dir), "GODOT_RAG_ACK_WAIT_S": "3"})
    sup = Supervisor(settings, echo=lambda m: None)
    stop = [False]
    try:
        runtime = sup.start()
        dsn = runtime["pg_dsn"]
        judge = sup.children["judge"].proc
        os.kill(judge.pid, signal.SIGSTOP)  # frozen: takes messages, acks none
        watcher = threading.Thread(target=sup.watch, args=(stop,), daemon=True)
        watcher.start()
        with grpc.insecure_channel(runtime["gateway"]) as ch:
            stub = sgrpc.AnalysisServiceStub(ch)
            aid = stub.Submit(
                spb.SubmitRequest(prompt=DEFAULT_PROMPT, path=str(repo / "samples" / "godot3_project")), timeout=60
            ).analysis_id
            _wait_until(
                lambda: (
                    _sql(
                        dsn,
                        "select count(*) as n from godot_rag.chunk_stages where analysis_id = %s and "
                        "stage = 'retrieve' and status <> 'done'",
                        (aid,),
                    )[0]["n"]
                    == 0
                    and _sql(dsn, "select count(*) as n from godot_rag.chunks where analysis_id = %s", (aid,))[0]["n"] > 0
                ),
                120,
                "all chunks retrieved",
            )
            assert _sql(dsn, "select count(*) as n from godot_rag.judgments where analysis_id = %s", (aid,))[0]["n"] == 0
            os.kill(judge.pid, signal.SIGKILL)
            _wait_until(
                lambda: stub.Get(spb.GetRequest(analysis_id=aid), timeout=30).status == "done", 180, "the analysis to finish"
            )
            result = stub.Get(spb.GetRequest(analysis_id=aid), timeout=30)
        assert sup.children["judge"].restarts >= 1
        assert result.verdict.label == "godot3"
        _check_complete(dsn, aid)
    finally:
        stop[0] = True
        sup.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def test_whole_stack_stopped_mid_run_resumes_on_restart(repo: Path):
    data_dir = Path(tempfile.mkdtemp(prefix="godot-rag-resume-"))
    data_dir.chmod(0o755)
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(data_dir), "GODOT_RAG_ACK_WAIT_S": "3"})
    path = str(repo / "samples" / "godot4_project")
    sup = Supervisor(settings, echo=lambda m: None)
    try:
        runtime = sup.start()
        dsn = runtime["pg_dsn"]
        os.kill(sup.children["judge"].proc.pid, signal.SIGSTOP)
        with grpc.insecure_channel(runtime["gateway"]) as ch:
            aid = sgrpc.AnalysisServiceStub(ch).Submit(spb.SubmitRequest(prompt=DEFAULT_PROMPT, path=path), timeout=60).analysis_id
        _wait_until(
            lambda: (
                _sql(dsn, "select count(*) as n from godot_rag.chunk_stages where analysis_id = %s and stage = 'judge'", (aid,))[0][
                    "n"
                ]
                > 3
            ),
            120,
            "chunks waiting for the judge",
        )
        os.kill(sup.children["judge"].proc.pid, signal.SIGKILL)
    finally:
        sup.stop()
    sup2 = Supervisor(settings, echo=lambda m: None)
    try:
        runtime = sup2.start()
        with grpc.insecure_channel(runtime["gateway"]) as ch:
            stub = sgrpc.AnalysisServiceStub(ch)
            # The same submission maps to the same analysis: it resumes rather than starting over.
            again = stub.Submit(spb.SubmitRequest(prompt=DEFAULT_PROMPT, path=path), timeout=60)
            assert again.analysis_id == aid
            _wait_until(
                lambda: stub.Get(spb.GetRequest(analysis_id=aid), timeout=30).status == "done", 180, "the analysis to finish"
            )
            assert stub.Get(spb.GetRequest(analysis_id=aid), timeout=30).verdict.label == "godot4"
        _check_complete(runtime["pg_dsn"], aid)
    finally:
        sup2.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
