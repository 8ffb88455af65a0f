"""The reliability catalogue: faults and load on the real embedded stack, each case with what must happen.

One registry (:data:`CASES`) feeds both `make reliability` (benchmarks/reliability.py prints the table)
and the tests (tests/integration/test_reliability.py runs each case). Other work appends its cases with
:func:`case` (the hostile-input rows are listed in :data:`PLANNED` until they are).

Every case runs on a real stack (PostgreSQL, nats-server, the six services as processes) started by
:class:`Harness` on one data folder, with redelivery made fast (GODOT_RAG_ACK_WAIT_S). Each case analyses
a project of its own (files marked with the case name, so no cache from another case serves it) and
accounts for every chunk: the chunk ids the chunker makes of the project locally are the expected set;
a chunk is lost when it is not settled (done or failed) once the analysis finished, duplicated when the
store holds a chunk that is not expected or two chunks of one span.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import grpc
import nats
import nats.js.errors
import psycopg
from psycopg.rows import dict_row

from godot_rag.cli import DEFAULT_PROMPT
from godot_rag.domain.chunking.files import chunk_file
from godot_rag.domain.ids import subject_token
from godot_rag.domain.ingest.policy import scan_folder
from godot_rag.infra.embedded import free_port, pid_alive
from godot_rag.settings import load_settings
from godot_rag.stages import CONSUMERS, STREAM_CHUNKS, STREAM_FILES
from godot_rag.supervisor import SERVICES, Supervisor
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc

REPO = Path(__file__).resolve().parents[2]
SAMPLE3 = REPO / "samples" / "godot3_project"
SAMPLE4 = REPO / "samples" / "godot4_project"
FINISHED = ("done", "completed_with_failures")
MAX_FILE_BYTES = 2 * 1024 * 1024
# Redelivery after a crash within seconds instead of a minute.
BASE_ENV = {"GODOT_RAG_ACK_WAIT_S": "3", "GODOT_RAG_LOG_LEVEL": "INFO"}


@dataclass
class Observation:
    status: str  # the analysis status at the end ("running" when it never finished)
    verdict: str = ""
    lost: int = 0
    duplicated: int = 0
    failed: int = 0
    chunks: int = 0
    note: str = ""

    def summary(self) -> str:
        text = f"{self.status}"
        if self.verdict:
            text += f", {self.verdict}"
        text += f", {self.chunks} chunks"
        if self.failed:
            text += f", {self.failed} failed"
        return text + (f"; {self.note}" if self.note else "")


@dataclass(frozen=True)
class Case:
    name: str
    group: str  # faults | load | hostile input
    expected: str
    run: Callable[[Harness, Path], Observation]
    check: Callable[[Observation], bool]
    slow: bool = True  # slow cases run only in `make reliability` (pytest -m reliability)


CASES: list[Case] = []

# Rows of the table that belong to the bounded-input and exposure work; their cases register here too.
PLANNED: list[tuple[str, str]] = [
    ("hostile input", "binary .gd, invalid UTF-8, NUL bytes"),
    ("hostile input", "100 MB file, one-million-line file, deep nesting"),
    ("hostile input", "inputs crafted against each regex"),
    ("hostile input", "malformed scenes and project.godot"),
    ("hostile input", "archive slip, links, bombs, sparse members"),
    ("hostile input", "enormous prompt; prompt injection in code and node names"),
    ("hostile input", "path traversal in every API parameter; a remote caller naming a local path"),
    ("hostile input", "cross-site requests to the web API"),
    ("load", "one project of 5,000 .gd files with bounded memory"),
]


def case(name: str, group: str, expected: str, check: Callable[[Observation], bool], *, slow: bool = True):
    def register(fn: Callable[[Harness, Path], Observation]) -> Callable[[Harness, Path], Observation]:
        CASES.append(Case(name, group, expected, fn, check, slow))
        return fn

    return register


def clean(label: str = "godot3", status: tuple[str, ...] = ("done",)) -> Callable[[Observation], bool]:
    """Finished as ``status`` with ``label``, nothing lost, nothing duplicated."""
    return lambda o: o.status in status and o.verdict == label and o.lost == 0 and o.duplicated == 0


# ---------------------------------------------------------------- the stack


class Harness:
    """One embedded stack on one data folder, restarted when a case needs other settings."""

    def __init__(self, data_dir: Path, echo: Callable[[str], None] = lambda m: None):
        self.data_dir = data_dir
        self.echo = echo
        self.env: dict[str, str] | None = None
        self.sup: Supervisor | None = None
        self.runtime: dict = {}
        self._stop = [False]
        self._watcher: threading.Thread | None = None
        self.messages: list[str] = []

    # -- life

    def ensure(self, **env: str) -> None:
        wanted = {**BASE_ENV, **env}
        if self.sup is not None and self.env == wanted and self._watcher is not None and self._watcher.is_alive():
            return
        self.stop()
        self.start(wanted)

    def start(self, env: dict[str, str]) -> None:
        settings = load_settings({"GODOT_RAG_DATA_DIR": str(self.data_dir), **env})
        self.sup = Supervisor(settings, echo=self.messages.append)
        self.env = env
        self._stop = [False]
        try:
            self.runtime = self.sup.start()
        except BaseException:
            self.sup.stop()
            self.sup = None
            raise
        self._watcher = threading.Thread(target=self.sup.watch, args=(self._stop,), daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        if self.sup is None:
            return
        self._stop[0] = True
        if self._watcher is not None:
            self._watcher.join(10)
        self.sup.stop()
        self.sup = None
        self.env = None

    # -- access

    def sql(self, query: str, params=()) -> list[dict]:
        with psycopg.connect(self.runtime["pg_dsn"], row_factory=dict_row, connect_timeout=5) as conn:
            return conn.execute(query, params).fetchall()

    def try_sql(self, query: str, params=()) -> list[dict] | None:
        """None while the database is down (a case restarting it)."""
        try:
            return self.sql(query, params)
        except psycopg.OperationalError:
            return None

    def submit(self, path: Path, prompt: str = DEFAULT_PROMPT) -> str:
        deadline = time.monotonic() + 120
        while True:
            try:
                with grpc.insecure_channel(self.runtime["gateway"]) as ch:
                    return sgrpc.AnalysisServiceStub(ch).Submit(spb.SubmitRequest(prompt=prompt, path=str(path)),
                                                                timeout=120).analysis_id
            except grpc.RpcError as exc:
                # The gateway restarting (a case killed it): try again.
                if exc.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def status(self, aid: str) -> str:
        rows = self.try_sql("select status from godot_rag.analyses where analysis_id = %s", (aid,))
        return rows[0]["status"] if rows else "unknown"

    def wait(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.3)
        return False

    def wait_finished(self, aid: str, timeout_s: float = 300) -> str:
        self.wait(lambda: self.status(aid) in FINISHED, timeout_s)
        return self.status(aid)

    def settled_count(self, aid: str) -> int:
        rows = self.try_sql("select count(*) as n from godot_rag.chunk_stages where analysis_id = %s and stage = 'aggregate' "
                            "and status in ('done', 'failed')", (aid,))
        return rows[0]["n"] if rows else 0

    def consumer_ack_pending(self, durables: list[str]) -> dict[str, int]:
        async def read() -> dict[str, int]:
            nc = await nats.connect(self.runtime["nats_url"], connect_timeout=5)
            try:
                js = nc.jetstream()
                out = {}
                for d in durables:
                    stream = STREAM_FILES if d in ("parser", "chunker") else STREAM_CHUNKS
                    try:
                        out[d] = (await js.consumer_info(stream, d)).num_ack_pending
                    except nats.js.errors.NotFoundError:
                        out[d] = -1  # the service has not created its durable yet
                return out
            finally:
                await nc.close()

        return asyncio.run(read())

    def kill_when_holding(self, durable: str, pid: int, timeout_s: float) -> int:
        """SIGKILL ``pid`` as soon as ``durable`` has messages pending its ack; how many it held (0: killed at the timeout)."""

        async def watch() -> int:
            nc = await nats.connect(self.runtime["nats_url"], connect_timeout=5)
            try:
                js = nc.jetstream()
                stream = STREAM_FILES if durable in ("parser", "chunker") else STREAM_CHUNKS
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline:
                    held = (await js.consumer_info(stream, durable)).num_ack_pending
                    if held > 0:
                        os.kill(pid, signal.SIGKILL)
                        return held
                    await asyncio.sleep(0.02)
                os.kill(pid, signal.SIGKILL)
                return 0
            finally:
                await nc.close()

        return asyncio.run(watch())

    def observe(self, aid: str, root: Path, note: str = "") -> Observation:
        expected = expected_chunks(root)
        rows = self.sql(
            """select c.chunk_id, c.source_file, c.start_line, c.end_line, coalesce(s.status, 'missing') as status
               from godot_rag.chunks c left join godot_rag.chunk_stages s
                 on s.analysis_id = c.analysis_id and s.chunk_id = c.chunk_id and s.stage = 'aggregate'
               where c.analysis_id = %s""", (aid,))
        settled = {r["chunk_id"] for r in rows if r["status"] in ("done", "failed")}
        spans = [(r["source_file"], r["start_line"], r["end_line"]) for r in rows]
        duplicated = len({r["chunk_id"] for r in rows} - expected) + (len(spans) - len(set(spans)))
        verdict = self.sql("select label from godot_rag.verdicts where analysis_id = %s", (aid,))
        return Observation(status=self.status(aid), verdict=verdict[0]["label"] if verdict else "",
                           lost=len(expected - settled), duplicated=duplicated,
                           failed=sum(1 for r in rows if r["status"] == "failed"), chunks=len(rows), note=note)


def expected_chunks(root: Path) -> set[str]:
    """The chunk ids the pipeline must settle for the project at ``root``: cut here by the same chunker."""
    return {c.chunk_id for f in scan_folder(root, max_bytes=MAX_FILE_BYTES) if f.included
            for c in chunk_file(f.source_file, f.source_kind, f.data).chunks}


def make_project(dest: Path, marker: str, sample: Path = SAMPLE3, copies: int = 1) -> Path:
    """The sample with every script marked (new content, so no cache serves it) and copied ``copies`` times."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(sample, dest)
    scripts = sorted(dest.glob("*.gd"))
    for script in scripts:
        script.write_text(f"# reliability case {marker}\n" + script.read_text())
    for i in range(2, copies + 1):
        sub = dest / f"copy{i}"
        sub.mkdir()
        for script in scripts:
            (sub / script.name).write_text(f"# copy {i}\n" + script.read_text())
    dest.chmod(0o755)
    return dest


def slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name).strip("-")


# ---------------------------------------------------------------- faults: kill -9 of each service


def _kill_service_mid_run(service: str) -> Callable[[Harness, Path], Observation]:
    def run(h: Harness, tmp: Path) -> Observation:
        h.ensure()
        project = make_project(tmp / slug(f"kill-{service}"), f"kill -9 {service}", copies=3)
        assert h.sup is not None
        child = h.sup.children[service]
        restarts = child.restarts
        if service == "gateway":
            aid = h.submit(project)
            os.kill(child.proc.pid, signal.SIGKILL)
            note = "killed right after the submission"
        else:
            # Killed the moment it holds messages (JetStream counts them as pending its ack): mid-analysis.
            h.wait(lambda: h.consumer_ack_pending([service])[service] >= 0, 60)
            killer = threading.Thread(target=lambda: held.append(h.kill_when_holding(service, child.proc.pid, 120)))
            held: list[int] = []
            killer.start()
            aid = h.submit(project)
            killer.join()
            note = f"killed holding {held[0]} messages" if held and held[0] > 0 else "killed (held none)"
        h.wait_finished(aid, 300)
        restarted = h.sup.children[service].restarts > restarts
        return h.observe(aid, project, note + ("; restarted" if restarted else "; NOT restarted"))

    return run


for _service in SERVICES:
    case(f"kill -9 {_service} mid-analysis", "faults",
         "killed holding messages; done, godot3, 0 lost, 0 duplicated; service restarted",
         lambda o: clean()(o) and o.note.endswith("; restarted") and "held none" not in o.note)(_kill_service_mid_run(_service))


# ---------------------------------------------------------------- faults: the whole stack


def _processes_with_parent(ppid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
                    found.append(int(entry.name))
    return found


@case("kill -9 of the whole stack (godot-rag up) and restart", "faults",
      "no server or service outlives it; the restart resumes: done, godot3, 0 lost, 0 duplicated",
      lambda o: clean()(o) and "orphans: none" in o.note)
def kill_whole_stack(h: Harness, tmp: Path) -> Observation:
    h.ensure()  # builds the data folder (knowledge base) if this is the first case
    env = dict(h.env or BASE_ENV)
    h.stop()
    project = make_project(tmp / "whole-stack", "kill -9 whole stack", copies=6)
    up_env = {**os.environ, **env, "GODOT_RAG_DATA_DIR": str(h.data_dir), "PYTHONPATH": os.pathsep.join(sys.path)}
    log_path = tmp / "up.log"
    with open(log_path, "ab") as fh:
        up = subprocess.Popen([sys.executable, "-m", "godot_rag.cli", "up"], env=up_env, stdout=fh, stderr=subprocess.STDOUT)
    runtime_file = h.data_dir / "run" / "runtime.json"
    try:
        if not h.wait(lambda: runtime_file.exists(), 240):
            raise AssertionError(f"godot-rag up did not start; see {log_path}")
        h.runtime = json.loads(runtime_file.read_text())
        aid = h.submit(project)
        h.wait(lambda: h.settled_count(aid) > 0, 120)
        servers = [p for p in (_read_int(h.data_dir / "nats" / "nats-server.pid"), _read_int(h.data_dir / "pg" / "postmaster.pid"))
                   if p is not None]
        tracked = _processes_with_parent(up.pid) + servers
        running_at_kill = h.status(aid)
        up.kill()
        up.wait(10)
        h.wait(lambda: not any(pid_alive(p) for p in tracked), 60)
        orphans = [p for p in tracked if pid_alive(p)]
    finally:
        if up.poll() is None:
            up.kill()
    for pid in orphans:  # leave a clean machine even when the case fails
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    h.start(env)
    again = h.submit(project)
    h.wait_finished(again, 300)
    note = (f"killed while {running_at_kill}; orphans: {orphans or 'none'}; "
            f"{'same analysis resumed' if again == aid else 'a different analysis'}")
    return h.observe(aid, project, note)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@case("NATS killed mid-analysis (supervisor restarts it)", "faults",
      "done, godot3, 0 lost, 0 duplicated, no dead letter; nats-server restarted",
      lambda o: clean()(o) and "dead letters: 0;" in o.note and o.note.endswith(" restarted"))
def nats_restarted(h: Harness, tmp: Path) -> Observation:
    h.ensure()
    assert h.sup is not None and h.sup.nats is not None
    project = make_project(tmp / "nats-restart", "nats restarted", copies=4)
    before = h.sup.server_restarts["nats-server"]
    aid = h.submit(project)
    h.wait(lambda: h.settled_count(aid) > 0, 120)
    at_kill = h.settled_count(aid)
    os.kill(h.sup.nats.proc.pid, signal.SIGKILL)
    h.wait_finished(aid, 300)
    restarted = h.sup.server_restarts["nats-server"] > before
    return h.observe(aid, project, f"killed at {at_kill} chunks settled; {_dead_letters(h, aid)}; "
                                   + ("nats-server restarted" if restarted else "nats-server not restarted"))


def _dead_letters(h: Harness, aid: str) -> str:
    return f"dead letters: {h.sql('select count(*) as n from godot_rag.dead_letters where analysis_id = %s', (aid,))[0]['n']}"


@case("PostgreSQL killed mid-analysis (supervisor restarts it)", "faults",
      "done, godot3, 0 lost, 0 duplicated, no dead letter; postgres restarted",
      lambda o: clean()(o) and "dead letters: 0;" in o.note and o.note.endswith(" restarted"))
def postgres_restarted(h: Harness, tmp: Path) -> Observation:
    h.ensure()
    assert h.sup is not None and h.sup.pg is not None
    project = make_project(tmp / "pg-restart", "postgres restarted", copies=4)
    before = h.sup.server_restarts["postgres"]
    aid = h.submit(project)
    h.wait(lambda: h.settled_count(aid) > 0, 120)
    pid = h.sup.pg.postmaster_pid()
    assert pid is not None
    at_kill = h.settled_count(aid)
    os.kill(pid, signal.SIGKILL)
    h.wait(lambda: h.sup.server_restarts["postgres"] > before, 60)
    h.wait_finished(aid, 300)
    restarted = h.sup.server_restarts["postgres"] > before
    return h.observe(aid, project, f"killed at {at_kill} chunks settled; {_dead_letters(h, aid)}; "
                                   + ("postgres restarted" if restarted else "postgres not restarted"))


# ---------------------------------------------------------------- faults: a poison message that kills its worker


@case("a judge that dies on one chunk on every delivery", "faults",
      "completed_with_failures: that chunk failed by the MaxDeliver advisory, every other chunk done; 0 lost, 0 duplicated",
      lambda o: o.status == "completed_with_failures" and o.failed == 1 and o.lost == 0 and o.duplicated == 0
      and "advisory" in o.note and o.note.endswith("the crashing chunk"))
def worker_crashes_on_one_message(h: Harness, tmp: Path) -> Observation:
    project = make_project(tmp / "crash-one", "crash on one chunk")
    target = sorted(expected_chunks(project))[0]
    h.ensure(GODOT_RAG_FAULT_HOOKS="1", GODOT_RAG_FAULT_CRASH_ON=f"judge:{subject_token(target)}")
    aid = h.submit(project)
    h.wait_finished(aid, 600)
    letters = h.sql("select stage, key, error, deliveries from godot_rag.dead_letters where analysis_id = %s", (aid,))
    failed = h.sql("select chunk_id from godot_rag.chunk_stages where analysis_id = %s and stage = 'judge' and status = 'failed'",
                   (aid,))
    note = f"dead letters: {[(d['stage'], d['error'][:60]) for d in letters]}; failed judge: {[r['chunk_id'] for r in failed]}"
    if [r["chunk_id"] for r in failed] == [target]:
        note += "; the crashing chunk"
    return h.observe(aid, project, note)


# ---------------------------------------------------------------- faults: the LLM endpoint


class FakeLLM:
    """A local OpenAI-compatible endpoint that misbehaves on purpose: mode = slow | garbage | error500."""

    def __init__(self) -> None:
        self.mode = "garbage"
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                self.rfile.read(length)
                if outer.mode == "slow":
                    time.sleep(5)  # past the judge's 1 s timeout
                if outer.mode == "error500":
                    body, code = b'{"error": "overloaded"}', 500
                else:
                    body, code = b"this is not a chat completion {", 200
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def log_message(self, *args) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


_fake_llm: FakeLLM | None = None


def _llm_case(mode: str) -> Callable[[Harness, Path], Observation]:
    def run(h: Harness, tmp: Path) -> Observation:
        global _fake_llm
        if _fake_llm is None:
            _fake_llm = FakeLLM()
        port = free_port() if mode == "down" else _fake_llm.port
        _fake_llm.mode = mode
        h.ensure(GODOT_RAG_JUDGE="llm", GODOT_RAG_LLM_URL=f"http://127.0.0.1:{port}/v1", GODOT_RAG_LLM_MODEL="fault-test",
                 GODOT_RAG_LLM_FLAVOR="openai", GODOT_RAG_LLM_TIMEOUT_S="1", GODOT_RAG_LLM_RETRIES="0",
                 GODOT_RAG_JUDGE_CASCADE="all")
        project = tmp / f"llm-{mode}"
        project.mkdir(exist_ok=True)
        project.chmod(0o755)
        (project / "project.godot").write_text(f'config_version=4\n\n[application]\nconfig/name="LLM {mode}"\n')
        (project / "player.gd").write_text(f"# llm {mode}\nextends KinematicBody2D\n\nfunc _physics_process(delta):\n"
                                           "\tmove_and_slide(Vector2.ZERO)\n")
        aid = h.submit(project)
        h.wait_finished(aid, 400)
        errors = h.sql("select j.status, left(j.error, 80) as error from godot_rag.judgments j where j.analysis_id = %s", (aid,))
        obs = h.observe(aid, project, f"judgments: {sorted({(r['status'], r['error'] or '') for r in errors})}")
        obs.verdict = obs.verdict or "-"
        return obs

    return run


for _mode, _what in (("down", "the LLM endpoint down"), ("slow", "the LLM endpoint slower than its timeout"),
                     ("garbage", "the LLM endpoint answering garbage"), ("error500", "the LLM endpoint answering 500s")):
    case(_what, "faults", "finishes with every chunk settled (failed judgments visible): 0 lost, 0 duplicated, no hang",
         lambda o: o.status in FINISHED and o.lost == 0 and o.duplicated == 0 and o.chunks > 0)(_llm_case(_mode))


# ---------------------------------------------------------------- load


_load: dict[str, object] = {}


def _twenty_projects(h: Harness, tmp: Path) -> dict:
    if "result" in _load:
        return _load["result"]  # type: ignore[return-value]
    h.ensure()
    projects = [make_project(tmp / f"load-{i:02d}", f"load {i}", sample=SAMPLE4 if i % 2 else SAMPLE3) for i in range(20)]
    durables = list(CONSUMERS)
    peaks = {d: 0 for d in durables}
    sampling = [True]

    def sample() -> None:
        while sampling[0]:
            with contextlib.suppress(Exception):
                for d, n in h.consumer_ack_pending(durables).items():
                    peaks[d] = max(peaks[d], n)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with ThreadPoolExecutor(20) as pool:
        aids = list(pool.map(h.submit, projects))
    for aid in aids:
        h.wait_finished(aid, 600)
    sampling[0] = False
    sampler.join(5)
    observations = [h.observe(aid, p) for aid, p in zip(aids, projects, strict=True)]
    _load["result"] = {"observations": observations, "peaks": peaks, "labels": ["godot4" if i % 2 else "godot3" for i in range(20)]}
    return _load["result"]  # type: ignore[return-value]


@case("20 projects at once", "load", "all 20 done with their own verdict; 0 lost, 0 duplicated in each",
      lambda o: o.status == "done" and o.lost == 0 and o.duplicated == 0 and o.note == "verdicts right: 20/20")
def twenty_projects(h: Harness, tmp: Path) -> Observation:
    result = _twenty_projects(h, tmp)
    obs: list[Observation] = result["observations"]
    right = sum(1 for o, label in zip(obs, result["labels"], strict=True) if o.verdict == label)
    statuses = sorted({o.status for o in obs})
    return Observation(status=statuses[0] if len(statuses) == 1 else "/".join(statuses), verdict="per project",
                       lost=sum(o.lost for o in obs), duplicated=sum(o.duplicated for o in obs),
                       failed=sum(o.failed for o in obs), chunks=sum(o.chunks for o in obs), note=f"verdicts right: {right}/20")


@case("back-pressure holds under 20 projects", "load", "no consumer ever holds more than its MaxAckPending",
      lambda o: o.status == "done" and o.note.startswith("within bounds"))
def back_pressure(h: Harness, tmp: Path) -> Observation:
    result = _twenty_projects(h, tmp)
    assert h.sup is not None
    settings = h.sup.settings
    bounds = {d: settings.max_ack_pending_for(d, spec.max_ack_pending) for d, spec in CONSUMERS.items()}
    peaks = result["peaks"]
    over = {d: (peaks[d], bounds[d]) for d in bounds if peaks[d] > bounds[d]}
    obs: list[Observation] = result["observations"]
    return Observation(status="done" if all(o.status == "done" for o in obs) else "not all done", verdict="-",
                       chunks=sum(o.chunks for o in obs),
                       note=("within bounds: " if not over else "OVER: ") + ", ".join(f"{d} {peaks[d]}/{bounds[d]}" for d in bounds))


# ---------------------------------------------------------------- faults: out of space


def _mount_tmpfs(path: Path, size: str) -> str:
    """Mount a size-limited tmpfs at ``path``; the reason it cannot be done, or "" when mounted."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "mounting a size-limited filesystem needs root and mount(8)"
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=755", "tmpfs", str(path)],
                          capture_output=True, text=True)
    return "" if done.returncode == 0 else f"mount -t tmpfs refused: {done.stderr.strip()}"


@case("the data folder out of space, then space freed", "faults",
      "chunks wait while the disk is full (no dead letter); once space is freed: done, godot3, 0 lost, 0 duplicated",
      lambda o: clean()(o) and "dead letters: 0" in o.note)
def out_of_space(h: Harness, tmp: Path) -> Observation:
    h.ensure()
    env = dict(h.env or BASE_ENV)
    h.stop()
    # The whole data folder on a tmpfs of its own: copy the built one (knowledge base included) into it.
    full_dir = tmp / "small-disk"
    reason = _mount_tmpfs(full_dir, "1200m")
    if reason:
        return Observation(status="skipped", note=reason)
    small = Harness(full_dir, h.echo)
    try:
        subprocess.run(["cp", "-a", f"{h.data_dir}/.", str(full_dir)], check=True)
        for stale in (full_dir / "pg" / "postmaster.pid", full_dir / "run" / "runtime.json"):
            stale.unlink(missing_ok=True)
        small.start(env)
        project = make_project(tmp / "out-of-space", "out of space", copies=3)
        filler = full_dir / "filler"
        aid = small.submit(project)
        small.wait(lambda: small.settled_count(aid) > 0, 120)
        # Fill the disk to the last block: PostgreSQL and JetStream writes fail with ENOSPC from here on.
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True)
        time.sleep(20)
        waiting_while_full = f"{small.status(aid)}, {small.settled_count(aid)} chunks settled"
        filler.unlink()
        small.wait_finished(aid, 400)
        letters = small.try_sql("select count(*) as n from godot_rag.dead_letters where analysis_id = %s", (aid,)) or [{"n": -1}]
        return small.observe(aid, project, f"while full: {waiting_while_full}; dead letters: {letters[0]['n']}")
    finally:
        small.stop()
        subprocess.run(["umount", "-l", str(full_dir)], capture_output=True)
