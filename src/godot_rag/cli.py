"""The godot-rag command line: up, analyze, expand, patch, kb build, replay, diff, export."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from godot_rag.infra.auth import client_channel
from godot_rag.infra.embedded import EmbeddedError
from godot_rag.infra.service import grpc_message_options
from godot_rag.pipeline.export import result_to_json
from godot_rag.pipeline.submit import DEFAULT_PROMPT
from godot_rag.settings import Settings, SettingsError, load_settings
from godot_rag.supervisor import SupervisorError

console = Console(stderr=True)


class CliError(RuntimeError):
    pass


# ---------------------------------------------------------------- stack discovery


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_gateway(settings: Settings) -> str | None:
    if settings.gateway_addr:
        return settings.gateway_addr
    try:
        runtime = json.loads(settings.runtime_file.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if not _pid_alive(int(runtime.get("pid", 0))):
        return None
    return runtime.get("gateway")


def start_stack(settings: Settings, timeout_s: float = 600) -> subprocess.Popen:
    """Start `godot-rag up` in the background and wait until its gateway answers."""
    settings.run_dir.mkdir(parents=True, exist_ok=True)
    log_path = settings.run_dir / "up.log"
    fh = open(log_path, "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "godot_rag.cli", "up"],
        stdout=fh,
        stderr=subprocess.STDOUT,
        env={**os.environ, **settings.to_env()},
        start_new_session=True,
    )
    fh.close()
    deadline = time.monotonic() + timeout_s
    with console.status("starting the embedded stack (PostgreSQL, NATS JetStream, six services)...") as status:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise CliError(f"godot-rag up exited with {proc.returncode}; see {log_path}:\n" + _tail(log_path))
            if running_gateway(settings):
                return proc
            lines = _tail(log_path, 1).strip()
            if lines:
                status.update(lines[-120:])
            time.sleep(0.2)
    proc.terminate()
    raise CliError(f"the embedded stack did not come up in {timeout_s}s; see {log_path}")


def _tail(path: Path, n: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except FileNotFoundError:
        return ""


def stop_stack(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


# ---------------------------------------------------------------- analyze

_GIT_URL_PREFIXES = ("https://", "http://", "ssh://", "git://", "file://")


def looks_like_git_url(target: str) -> bool:
    """URL-shaped targets are cloned; a local folder is scanned as it is unless --git asks for its commits."""
    if target.startswith(_GIT_URL_PREFIXES):
        return True
    head = target.split("/", 1)[0]
    return "@" in head and ":" in head and not Path(target).exists()  # user@host:path


def _local_repo_archive(repo: Path, ref: str, settings: Settings) -> bytes:
    """The tree of a local repository's commit (``ref`` or HEAD) as tar bytes, read by the caller's own git."""
    from godot_rag.infra.fetch import git_env

    if ref.startswith("-"):
        raise CliError(f"refused git ref {ref!r}")
    try:
        done = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "archive", "--format=tar", ref or "HEAD"],
            cwd=repo,
            env=git_env(),
            capture_output=True,
            timeout=settings.git_timeout_s,
            check=False,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        raise CliError(f"{repo}: git archive failed ({exc})") from exc
    if done.returncode != 0:
        raise CliError(f"{repo}: git archive failed: {done.stderr.decode('utf-8', 'replace').strip()[:300]}")
    return done.stdout


def submit_request(
    target: str,
    prompt: str,
    *,
    kind: str = "",
    git: bool = False,
    ref: str = "",
    project_id: str = "",
    settings: Settings | None = None,
):
    """The SubmitRequest for one command-line target ('-' = a snippet on stdin).

    Local inputs travel as content (an archive built in memory, the expanded
    text, the archive's bytes), never as paths: the gateway may be another
    machine, and it reads no caller's paths (docs/security.md). Only remote git
    URLs travel as URLs, for the gateway to clone.
    """
    from godot_rag.domain.ingest.archive import archive_stem, looks_like_archive_name
    from godot_rag.domain.ingest.policy import IngestError
    from godot_rag.infra.fetch import pack_folder
    from godot_rag.pipeline.submit import walk_limits
    from godot_rag.v1 import services_pb2 as spb

    settings = settings or load_settings()
    if target == "-":
        return spb.SubmitRequest(prompt=prompt, snippet=sys.stdin.read(), snippet_kind=kind, project_id=project_id)
    if target.startswith("file://"):
        target, git = target[len("file://") :], True
    if looks_like_git_url(target):
        return spb.SubmitRequest(prompt=prompt, git_url=target, git_ref=ref, project_id=project_id)
    path = Path(target).expanduser().resolve()
    if git:
        if not path.is_dir():
            raise CliError(f"{target}: not a local git repository folder")
        name = path.name[:-4] if path.name.endswith(".git") else path.name
        return spb.SubmitRequest(
            prompt=prompt,
            archive=_local_repo_archive(path, ref, settings),
            archive_name=f"{name}.tar",
            project_id=project_id or f"git:{name or 'repository'}",
        )
    if path.is_dir():
        try:
            data = pack_folder(path, walk_limits(settings), max_file_bytes=settings.max_file_bytes)
        except IngestError as exc:
            raise CliError(f"{target}: {exc}") from exc
        return spb.SubmitRequest(
            prompt=prompt, archive=data, archive_name=f"{path.name}.tar.gz", project_id=project_id or f"local:{path.name}"
        )
    if path.is_file():
        data = path.read_bytes()
        from godot_rag.domain.ingest.archive import detect_format

        if looks_like_archive_name(path.name) or detect_format(data[:1024]):
            return spb.SubmitRequest(
                prompt=prompt, archive=data, archive_name=path.name, project_id=project_id or f"archive:{archive_stem(path.name)}"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CliError(f"{target} is neither a folder, an archive nor an expanded-text file (not UTF-8: {exc})") from exc
        return spb.SubmitRequest(
            prompt=prompt, expanded_text=text, project_id=project_id or f"expanded:{path.name.rsplit('.', 1)[0]}"
        )
    raise CliError(f"no such file or folder: {target}")


def analyze_one(
    stub,
    target: str,
    prompt: str,
    kind: str = "",
    *,
    git: bool = False,
    ref: str = "",
    project_id: str = "",
    settings: Settings | None = None,
) -> list[dict]:
    """Submit one target and wait for each of its projects (one per project.godot root)."""
    from godot_rag.infra.auth import auth_metadata
    from godot_rag.v1 import services_pb2 as spb

    settings = settings or load_settings()
    metadata = auth_metadata(settings.auth_token)
    request = submit_request(target, prompt, kind=kind, git=git, ref=ref, project_id=project_id, settings=settings)
    try:
        submitted = stub.Submit(request, timeout=300, metadata=metadata)
    except grpc.RpcError as exc:
        raise CliError(f"{target}: {exc.details()}") from exc
    projects = list(submitted.projects) or [
        spb.SubmittedProject(analysis_id=submitted.analysis_id, project_id=submitted.project_id)
    ]
    if len(projects) > 1:
        console.print(f"{target}: {len(projects)} projects: " + ", ".join(p.project_root or "." for p in projects))
    docs = []
    for project in projects:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("chunks"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task(f"{project.project_id}", total=None)
            for p in stub.WatchProgress(spb.GetRequest(analysis_id=project.analysis_id), metadata=metadata):
                total = p.chunks_total if p.files_chunked >= p.files_total else None
                bar.update(task, completed=p.chunks_done + p.chunks_failed, total=total)
        result = stub.Get(spb.GetRequest(analysis_id=project.analysis_id), timeout=120, metadata=metadata)
        doc = result_to_json(result)
        doc["project_root"] = project.project_root
        doc["source_origin"] = submitted.source_origin
        doc["input_ref"] = submitted.input_ref
        docs.append(doc)
    return docs


def print_summary(doc: dict) -> None:
    # Piped or logged output (make run, CI) gets a wide table instead of rich's 80-column fallback.
    out = Console(width=None if sys.stdout.isatty() else 150)
    v = doc["verdict"]
    out.print(f"[bold]{doc['project_id']}[/bold]  analysis {doc['analysis_id']}")
    table = Table(show_header=True, header_style="bold")
    for col in ("file", "kind", "status", "chunks", "godot3", "godot4", "neutral"):
        table.add_column(col, no_wrap=True)
    table.add_column("note", overflow="ellipsis", no_wrap=True, max_width=60)
    per_file: dict[str, dict[str, int]] = {}
    for c in doc["chunks"]:
        counts = per_file.setdefault(c["source_file"], {"godot3": 0, "godot4": 0, "neutral": 0})
        if c["signal"] in counts:
            counts[c["signal"]] += 1
    for f in doc["files"]:
        counts = per_file.get(f["source_file"], {"godot3": 0, "godot4": 0, "neutral": 0})
        note = f["excluded_reason"] or f["error"]
        table.add_row(
            f["source_file"],
            f["source_kind"] or "-",
            f["status"],
            str(f["chunk_count"]),
            str(counts["godot3"]),
            str(counts["godot4"]),
            str(counts["neutral"]),
            note[:70],
        )
    out.print(table)
    print_migration_basis(out, doc)
    for line in v.get("basis", []):
        out.print(f"  basis: {line}")
    out.print(f"[bold]verdict: {v['label']}[/bold] (confidence {v['confidence']:.2f}; counts {v['counts']})")
    if doc.get("status") == "completed_with_failures":
        failed_files = [f["source_file"] for f in doc["files"] if f["status"] == "failed"]
        failed_chunks = [c["chunk_id"] for c in doc["chunks"] if c["status"] == "failed"]
        out.print(
            f"[red]completed with failures: {len(failed_files)} files, {len(failed_chunks)} chunks failed[/red] "
            "(the verdict rests on the rest)"
        )
        for name in (failed_files + failed_chunks)[:20]:
            out.print(f"  failed: {name}", markup=False, highlight=False)
    print_judge_summary(out, doc)


MAX_NOTES_SHOWN = 25


def print_migration_basis(out: Console, doc: dict) -> None:
    """The basis for converting: each Godot 3 construct with its Godot 4 form and the knowledge record behind it."""
    notes = [(c["source_file"], n) for c in doc["chunks"] for n in c["migration_notes"]]
    if not notes:
        return
    out.print(f"[bold]migration basis[/bold] ({len(notes)} notes)")
    for source_file, n in notes[:MAX_NOTES_SHOWN]:
        basis = f"  [{n['basis_record_id']}]" if n["basis_record_id"] else ""
        out.print(f"  {source_file}:{n['line']}  {n['old']} -> {n['new']}{basis}", markup=False, highlight=False)
    if len(notes) > MAX_NOTES_SHOWN:
        out.print(f"  ... and {len(notes) - MAX_NOTES_SHOWN} more (all of them in --json)")


def print_judge_summary(out: Console, doc: dict) -> None:
    """LLM calls made and saved, tokens, and every failed judgment with its raw output."""
    stats = doc.get("judge_stats") or {}
    if stats.get("llm_calls") or stats.get("llm_calls_saved") or stats.get("cascade"):
        out.print(
            f"  judge: {stats.get('llm_calls', 0)} LLM calls, {stats.get('llm_calls_saved', 0)} saved by the "
            f"'{stats.get('cascade') or 'all'}' cascade, {stats.get('cached', 0)} reused from the cache; "
            f"{stats.get('prompt_tokens', 0)} prompt + {stats.get('completion_tokens', 0)} completion tokens"
        )
    failed = [c for c in doc["chunks"] if (c.get("judge") or {}).get("status") == "failed"]
    for c in failed[:20]:
        out.print(
            f"  judgment failed {c['chunk_id']} (lines {c['start_line']}-{c['end_line']}): "
            f"{(c.get('judgment_error') or c.get('last_error') or '')[:200]}",
            markup=False,
            highlight=False,
            style="red",
        )
        raw = (c.get("raw_output") or "").strip()
        if raw:
            out.print(f"    raw output: {raw[:300]!r}", markup=False, highlight=False)
    if len(failed) > 20:
        out.print(f"  ... {len(failed) - 20} more failed judgments (see --json)")


def cmd_analyze(args, settings: Settings) -> int:
    from godot_rag.v1 import services_pb2_grpc as sgrpc

    started = None
    addr = running_gateway(settings)
    if addr is None:
        started = start_stack(settings)
        addr = running_gateway(settings)
    docs = []
    try:
        with grpc.insecure_channel(addr, options=grpc_message_options(settings)) as channel:
            stub = sgrpc.AnalysisServiceStub(channel)
            for target in args.paths:
                for doc in analyze_one(
                    stub, target, args.prompt, args.kind, git=args.git, ref=args.ref, project_id=args.project_id, settings=settings
                ):
                    print_summary(doc)
                    docs.append(doc)
    finally:
        if started is not None and not args.keep_running:
            stop_stack(started)
    if args.json:
        payload = docs[0] if len(docs) == 1 else docs
        Path(args.json).write_text(json.dumps(payload, indent=2, ensure_ascii=False))
        console.print(f"wrote {args.json}")
    return 0


@contextlib.contextmanager
def gateway_stub(settings: Settings, keep_running: bool = False):
    """An AnalysisService stub on the running stack, or on one started for the command."""
    from godot_rag.v1 import services_pb2_grpc as sgrpc

    started = None
    addr = running_gateway(settings)
    if addr is None:
        started = start_stack(settings)
        addr = running_gateway(settings)
    if addr is None:
        raise CliError("no gateway answers (godot-rag up)")
    try:
        with client_channel(addr, settings.auth_token, grpc_message_options(settings)) as channel:
            yield sgrpc.AnalysisServiceStub(channel)
    finally:
        if started is not None and not keep_running:
            stop_stack(started)


def _rpc(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except grpc.RpcError as exc:
        raise CliError(exc.details() or str(exc.code())) from exc


def cmd_replay(args, settings: Settings) -> int:
    from godot_rag.v1 import services_pb2 as spb

    request = spb.ReplayRequest(
        analysis_id=args.analysis_id,
        stage=args.stage,
        chunk_ids=args.chunk or [],
        source_files=args.file or [],
        judge=args.judge or "",
        prompt_version=args.prompt_version or "",
        cascade=args.cascade or "",
        limit_per_table=args.limit_per_table or 0,
    )
    with gateway_stub(settings, args.keep_running) as stub:
        started = _rpc(stub.Replay, request, timeout=300)
        published = [c for c in started.chunks if c.published]
        from_stream = sum(1 for c in published if c.source == "stream")
        console.print(
            f"replay {started.replay_id} of {started.analysis_id} from stage {started.stage} (run {started.run}): "
            f"{len(published)} chunk(s) published, {from_stream} taken from the stream, "
            f"{len(published) - from_stream} rebuilt from the store (aged out), "
            f"{len(started.chunks) - len(published)} already done by this replay",
            highlight=False,
        )
        if args.verbose:
            for c in started.chunks:
                state = f"from the {c.source}" if c.published else "already done"
                console.print(f"  {c.chunk_id}: {state}", markup=False, highlight=False)
        replay = started
        if not args.no_wait:
            deadline = time.monotonic() + args.timeout
            with console.status("replaying..."):
                while replay.status == "running" and time.monotonic() < deadline:
                    time.sleep(0.3)
                    replay = _rpc(stub.GetReplay, spb.GetReplayRequest(replay_id=started.replay_id), timeout=60)
            if replay.status == "running":
                raise CliError(
                    f"replay {started.replay_id} still running after {args.timeout}s; run the same command again to resume or wait"
                )
        doc = {
            "replay_id": replay.replay_id,
            "analysis_id": replay.analysis_id,
            "stage": replay.stage,
            "run": replay.run,
            "status": replay.status,
            "judgment_version": replay.judgment_version,
            "chunks": [{"chunk_id": c.chunk_id, "source": c.source, "published": c.published} for c in started.chunks],
        }
        if replay.judgment_version and replay.status != "running":
            v = _rpc(
                stub.GetVerdict,
                spb.VerdictVersionRequest(analysis_id=replay.analysis_id, version_id=replay.judgment_version),
                timeout=60,
            )
            doc["verdict"] = {"label": v.verdict.label, "confidence": v.verdict.confidence, "current": v.current}
            console.print(
                f"replay {replay.status}: judgment version {replay.judgment_version} "
                f"(current: {'yes' if v.current else 'no'}), verdict {v.verdict.label} "
                f"({v.verdict.confidence:.2f})",
                highlight=False,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2))
        console.print(f"wrote {args.json}")
    return 0 if replay.status in ("done", "running") else 3


def print_diff(doc: dict, changed_only: bool = True) -> None:
    out = Console(width=None if sys.stdout.isatty() else 150)
    a, b, v, s = doc["a"], doc["b"], doc["verdict"], doc["summary"]
    out.print(
        f"A {a['analysis_id']} version {a['version_id'] or '-'}   B {b['analysis_id']} version {b['version_id'] or '-'}",
        markup=False,
        highlight=False,
    )
    change = "changed" if v["changed"] else "unchanged"
    out.print(
        f"verdict: {v['a'] or '-'} ({v['a_confidence']:.2f}) -> {v['b'] or '-'} ({v['b_confidence']:.2f}), {change}",
        markup=False,
        highlight=False,
    )
    table = Table(show_header=True, header_style="bold", title="summary")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key in (
        "chunks_compared",
        "chunks_changed",
        "label_changes",
        "migration_changes",
        "candidates_added",
        "candidates_removed",
        "candidates_moved",
        "notes_added",
        "notes_removed",
        "only_in_a",
        "only_in_b",
    ):
        table.add_row(key.replace("_", " "), str(s[key]))
    for key, n in s["transitions"].items():
        table.add_row(f"label {key}", str(n))
    out.print(table)
    for c in doc["chunks"]:
        if changed_only and not c["changed"]:
            continue
        out.print(
            f"{c['source_file']} L{c['start_line']}-L{c['end_line']} {c['chunk_id']}"
            + ("" if c["presence"] == "both" else f"  ({c['presence'].replace('_', ' ')})"),
            markup=False,
            highlight=False,
            style="bold",
        )
        if c["label"]:
            out.print(f"  label: {c['label']['a'] or '-'} -> {c['label']['b'] or '-'}", markup=False, highlight=False)
        if c["needs_migration"]:
            out.print(
                f"  needs migration: {c['needs_migration']['a']} -> {c['needs_migration']['b']}", markup=False, highlight=False
            )
        for h in c["candidates"]["added"]:
            out.print(f"  + candidate {h['table']}/{h['record_id']} (rank {h['rank']})", markup=False, highlight=False)
        for h in c["candidates"]["removed"]:
            out.print(f"  - candidate {h['table']}/{h['record_id']} (rank {h['rank']})", markup=False, highlight=False)
        for h in c["candidates"]["moved"]:
            out.print(
                f"  ~ candidate {h['table']}/{h['record_id']} rank {h['a_rank']} -> {h['b_rank']}", markup=False, highlight=False
            )
        for n in c["notes"]["added"]:
            out.print(f"  + note L{n['line']} {n['old']} -> {n['new']}", markup=False, highlight=False)
        for n in c["notes"]["removed"]:
            out.print(f"  - note L{n['line']} {n['old']} -> {n['new']}", markup=False, highlight=False)


def cmd_diff(args, settings: Settings) -> int:
    from godot_rag.v1 import services_pb2 as spb

    with gateway_stub(settings, args.keep_running) as stub:
        response = _rpc(stub.Diff, spb.DiffRequest(a=args.a, b=args.b, analysis_id=args.analysis or ""), timeout=300)
    doc = json.loads(response.json)
    if args.json:
        text = json.dumps(doc, indent=2, ensure_ascii=False)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(args.json).write_text(text)
            console.print(f"wrote {args.json}")
    if args.json != "-":
        print_diff(doc, changed_only=not args.all)
    return 0


def cmd_export(args, settings: Settings) -> int:
    from godot_rag.pipeline.export import write_classified
    from godot_rag.v1 import services_pb2 as spb

    bundles = []
    with gateway_stub(settings, args.keep_running) as stub:
        for aid in args.analysis_ids:
            result = _rpc(stub.Get, spb.GetRequest(analysis_id=aid), timeout=300)
            if result.status == "running":
                raise CliError(f"analysis {aid} is still running; export it once it has finished")
            traces = [
                _rpc(stub.GetChunkTrace, spb.ChunkTraceRequest(analysis_id=aid, chunk_id=c.trace.chunk_id), timeout=60)
                for c in result.chunks
            ]
            bundles.append((result, traces))
    written = write_classified(bundles, Path(args.out))
    for path in written:
        console.print(f"wrote {path}", markup=False, highlight=False)
    return 0


def cmd_expand(args, settings: Settings) -> int:
    from godot_rag.domain.ingest.policy import IngestError, ProjectFiles, expand, flatten
    from godot_rag.pipeline.submit import collect

    target = args.path
    # The user's own files, read by their own process: the gateway's path policy is not theirs.
    own = settings.with_overrides(allowed_roots="", host="127.0.0.1")
    try:
        if args.git or looks_like_git_url(target):
            submission = collect(git_url=target, git_ref=args.ref, settings=own, keep_text=True, local_caller=True)
        else:
            submission = collect(path=target, settings=own, keep_text=True, local_caller=True)
    except IngestError as exc:
        raise CliError(f"{target}: {exc}") from exc
    # Paths relative to the input, so reading the text back finds the same project roots.
    files = flatten([ProjectFiles(p.root, p.files) for p in submission.projects])
    text = expand(files)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for project in submission.projects:
        console.print(f"project {project.project_id} (root {project.root or '.'})")
    for f in files:
        if not f.included:
            shown = "shown as text" if f.has_text else "not shown"
            console.print(f"excluded {f.source_file}: {f.excluded_reason} ({shown})")
    return 0


ANALYSIS_ID_RE = re.compile(r"^a[0-9a-f]{20}$")


def _remote_patch(analysis_id: str, settings: Settings):
    """PatchResponse of a stored analysis, from the running gateway (a stack is started for the call when none runs)."""
    from godot_rag.v1 import services_pb2 as spb
    from godot_rag.v1 import services_pb2_grpc as sgrpc

    started = None
    addr = running_gateway(settings)
    if addr is None:
        started = start_stack(settings)
        addr = running_gateway(settings)
    if addr is None:
        raise CliError("no gateway answers (godot-rag up)")
    try:
        with client_channel(addr, settings.auth_token, grpc_message_options(settings)) as channel:
            try:
                return sgrpc.AnalysisServiceStub(channel).Patch(spb.PatchRequest(analysis_id=analysis_id), timeout=600)
            except grpc.RpcError as exc:
                raise CliError(f"{analysis_id}: {exc.details() or exc.code().name}") from exc
    finally:
        if started is not None:
            stop_stack(started)


def cmd_patch(args, settings: Settings) -> int:
    from rich.markup import escape

    from godot_rag.errors import InvalidInputError
    from godot_rag.pipeline.patch import FileChange, apply_changes, apply_patch, patch_project, read_project, write_outputs

    target = Path(args.target)
    out = console
    if target.exists():
        try:
            files = read_project(target, max_bytes=settings.max_file_bytes)
        except InvalidInputError as exc:
            raise CliError(str(exc)) from exc
        if not files:
            raise CliError(f"{target}: no .gd, .tscn, .tres or project.godot file to patch")
        result = patch_project(files)
        diff, summary = result.diff, result.summary()
        todos = [t.as_dict() for t in result.todos]
        kept = [{"file": k.path, "line": k.line, "symbol": k.symbol, "reason": k.reason} for k in result.kept]
        if args.out != "-":
            diff_path, basis_path = write_outputs(result, Path(args.out))
            out.print(f"wrote {diff_path} and {basis_path}")
        apply_to = target if args.apply == "" else (Path(args.apply) if args.apply else None)
        changes = None
    elif ANALYSIS_ID_RE.match(args.target):
        response = _remote_patch(args.target, settings)
        diff, summary = response.diff, dict(response.summary)
        todos = [
            {"file": f.source_file, "line": t.line, "rule": t.rule, "symbol": t.symbol, "note": t.note, "record_id": t.record_id}
            for f in response.files
            for t in f.todos
        ]
        kept = [
            {"file": f.source_file, "line": k.line, "symbol": k.symbol, "reason": k.reason} for f in response.files for k in f.kept
        ]
        if args.out != "-":
            from godot_rag.pipeline.patch import basis_path_for

            diff_path = Path(args.out)
            diff_path.parent.mkdir(parents=True, exist_ok=True)
            diff_path.write_text(diff, encoding="utf-8")
            basis_path_for(diff_path).write_text(response.basis_jsonl, encoding="utf-8")
            out.print(f"wrote {diff_path} and {basis_path_for(diff_path)}")
        if args.apply == "":
            raise CliError("--apply with an ANALYSIS_ID needs the project folder to write into: --apply PATH")
        apply_to = Path(args.apply) if args.apply else None
        # Each file is compared with the content the analysis stored (sha256) before anything is written.
        changes = [FileChange(f.source_file, f.sha256, f.patched_text.encode("utf-8")) for f in response.files if f.changed]
    else:
        raise CliError(f"{args.target}: no such folder or file, and not an ANALYSIS_ID (a{'0' * 20} form)")
    if args.out == "-":
        sys.stdout.write(diff)
    for t in todos:
        where = f"{t['file']}:{t['line']} [{t['rule']}] {t['note']}"
        out.print(f"[yellow]TODO[/yellow] {escape(where)}", highlight=False)
    applied = 0
    if apply_to is not None:
        try:
            done = (
                apply_patch(apply_to, result, force=args.force)
                if changes is None
                else apply_changes(apply_to, changes, force=args.force)
            )
        except InvalidInputError as exc:
            raise CliError(str(exc)) from exc
        applied = len(done.written)
        if done.git_dirty:
            out.print(f"[red]--force:[/red] applied over {len(done.git_dirty)} uncommitted change(s)")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"summary": {**summary, "applied": applied}, "todos": todos, "kept": kept}, indent=2, ensure_ascii=False)
        )
    out.print(
        f"files {summary['files']} (changed {summary['files_changed']}), hunks {summary['hunks']}, "
        f"edits {summary['edits']}, applied {applied} file(s), left for a person {summary['todos']} TODO(s), "
        f"engine names kept as the project's own {summary['kept']}",
        highlight=False,
    )
    return 0


class _KbProgress:
    """A rich progress bar fed by build_kb's (phase, done, total) reports.

    Step phases (reading, loading: a handful of steps) share one bar whose
    description follows the phase; counting phases (embedding N texts) get a bar each.
    """

    STEP_TOTAL = 10

    def __init__(self, bar: Progress):
        self.bar = bar
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        key = "steps" if total <= self.STEP_TOTAL else phase
        if key not in self.tasks:
            self.tasks[key] = self.bar.add_task(phase, total=total or None)
        self.bar.update(self.tasks[key], description=phase, completed=done, total=total or None)


def cmd_kb_build(args, settings: Settings) -> int:
    from godot_rag.infra.embedded import EmbeddedPostgres
    from godot_rag.infra.embedder import embedder_from_settings
    from godot_rag.infra.store import migrate_sync
    from godot_rag.pipeline.kb import build_kb, export_vectors

    embedder = embedder_from_settings(settings)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    if args.kb_command == "export-vectors":
        if embedder is None:
            raise CliError("export-vectors needs an embedder (GODOT_RAG_EMBEDDER=minilm or tei)")
        with Progress(*columns, console=console) as bar:
            header = export_vectors(Path(args.output), embedder, progress=_KbProgress(bar), dsn=args.dsn)
        console.print(f"wrote {header['count']} vectors of {header['model']} to {args.output}")
        return 0
    pg = None
    dsn = settings.pg_dsn
    if not dsn:
        pg = EmbeddedPostgres(settings.data_dir)
        dsn = pg.start()
    try:
        migrate_sync(dsn)
        with Progress(*columns, console=console) as bar:
            counts = build_kb(dsn, embedder=embedder, force=args.force, progress=_KbProgress(bar))
        console.print(f"knowledge base {'built: ' + str(counts) if counts else 'already current'}")
    finally:
        if pg is not None:
            pg.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="godot-rag", description="Tell Godot 3 from Godot 4 code, chunk by chunk, with evidence.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="start the embedded stack and keep it running")
    p = sub.add_parser("analyze", help="analyse folders, git repositories, archives or expanded-text files")
    p.add_argument(
        "paths",
        nargs="+",
        help="project folder, git URL, .zip/.tar.gz archive, expanded '# <path>' text file, or - for a snippet on stdin",
    )
    p.add_argument("--prompt", default=DEFAULT_PROMPT)
    p.add_argument("--json", help="write the result as JSON to this file")
    p.add_argument("--kind", default="", help="source_kind of a snippet read from stdin (guessed when omitted)")
    p.add_argument(
        "--git",
        action="store_true",
        help="clone the targets with git (implied for URLs); a local repository is read at its last commit",
    )
    p.add_argument("--ref", default="", help="branch or tag to clone (with --git or a URL)")
    p.add_argument("--project-id", default="", help="project id to use instead of the derived one")
    p.add_argument("--keep-running", action="store_true", help="leave the embedded stack running afterwards")
    p = sub.add_parser("expand", help="print a project in the expanded '# <relative/path>' text form")
    p.add_argument("path", help="project folder, git URL, .zip/.tar.gz archive or expanded-text file")
    p.add_argument("--git", action="store_true", help="read a local repository at its last commit instead of its folder")
    p.add_argument("--ref", default="", help="branch or tag to clone")
    p.add_argument("-o", "--output", help="write the text to this file instead of standard output")
    p = sub.add_parser("patch", help="the mechanical Godot 3 -> 4 changes as a unified diff, with the basis of every hunk")
    p.add_argument(
        "target",
        metavar="PATH|ANALYSIS_ID",
        help="project folder, an expanded-text file (diff only), or a stored analysis (from the gateway)",
    )
    p.add_argument(
        "--out",
        default="-",
        help="write the diff here (and its basis beside it as <name>.basis.jsonl); default: the diff on standard output",
    )
    p.add_argument(
        "--apply",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help="also write the patched files into the project (PATH: the folder; needed with an ANALYSIS_ID)",
    )
    p.add_argument("--force", action="store_true", help="with --apply: write even when the git tree is dirty or absent")
    p.add_argument("--json", help="write the summary and the TODOs as JSON to this file")
    p = sub.add_parser("replay", help="run a stage again for chunks of a finished analysis, as a new result version")
    p.add_argument("analysis_id")
    p.add_argument(
        "--stage",
        choices=("retrieve", "judge"),
        default="judge",
        help="the first stage run again (the stages after it follow); default judge",
    )
    p.add_argument("--chunk", action="append", metavar="CHUNK_ID", help="a chunk to replay (repeatable); default every chunk")
    p.add_argument("--file", action="append", metavar="PATH", help="every chunk of this file (repeatable)")
    p.add_argument("--judge", choices=("rules", "llm"), help="judge to use; default the stack's GODOT_RAG_JUDGE")
    p.add_argument("--prompt-version", help="with --judge llm: the prompt files' version (e.g. judge.v1)")
    p.add_argument("--cascade", choices=("all", "ambiguous"), help="with --judge llm: the cascade policy")
    p.add_argument("--limit-per-table", type=int, help="with --stage retrieve: hits kept per knowledge table")
    p.add_argument("--no-wait", action="store_true", help="publish and return without waiting for the replay to finish")
    p.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the replay (default 1800)")
    p.add_argument("--json", help="write the replay's outcome as JSON to this file")
    p.add_argument("-v", "--verbose", action="store_true", help="list every chunk and where its message came from")
    p.add_argument("--keep-running", action="store_true", help="leave the embedded stack running afterwards")
    p = sub.add_parser("diff", help="compare two analyses, or two judgment versions of one analysis")
    p.add_argument("a", help="analysis id (or judgment version id with --analysis)")
    p.add_argument("b", help="analysis id (or judgment version id with --analysis)")
    p.add_argument("--analysis", help="compare two judgment versions (A and B) of this analysis")
    p.add_argument("--json", help="write the diff document as JSON to this file ('-' = standard output only)")
    p.add_argument("--all", action="store_true", help="list unchanged chunks too")
    p.add_argument("--keep-running", action="store_true", help="leave the embedded stack running afterwards")
    p = sub.add_parser("export", help="write analyses as a classified tree: DIR/<label>/<project>/ and DIR/dataset.jsonl")
    p.add_argument("analysis_ids", nargs="+", metavar="ANALYSIS_ID")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--keep-running", action="store_true", help="leave the embedded stack running afterwards")
    kb = sub.add_parser("kb", help="knowledge base")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    b = kb_sub.add_parser("build", help="load the shipped Godot reference data (embeds with GODOT_RAG_EMBEDDER)")
    b.add_argument("--force", action="store_true", help="reload even when the knowledge base is current")
    e = kb_sub.add_parser("export-vectors", help="(maintainers) recompute the vectors shipped in kb_data/")
    e.add_argument("--output", default=str(Path(__file__).parent / "kb_data" / "vectors_all-MiniLM-L6-v2.f16.gz"))
    e.add_argument("--dsn", default="", help="reuse the vectors cached in this database (a KB built with the same embedder)")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        if args.command == "up":
            from godot_rag.supervisor import run_up

            return run_up(settings, echo=lambda msg: print(msg, flush=True))
        if args.command == "analyze":
            return cmd_analyze(args, settings)
        if args.command == "expand":
            return cmd_expand(args, settings)
        if args.command == "patch":
            return cmd_patch(args, settings)
        if args.command == "kb":
            return cmd_kb_build(args, settings)
        if args.command == "replay":
            return cmd_replay(args, settings)
        if args.command == "diff":
            return cmd_diff(args, settings)
        if args.command == "export":
            return cmd_export(args, settings)
    except (CliError, SettingsError, SupervisorError, EmbeddedError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
