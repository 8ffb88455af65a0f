"""Submission: input form -> recorded analysis -> one file task per included file."""

from __future__ import annotations

import asyncio
import logging
import posixpath
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from opentelemetry import trace

from godot_rag.domain.aggregation.verdict import AGGREGATOR_VERSION
from godot_rag.domain.chunking.direct import CHUNKER_VERSION
from godot_rag.domain.chunking.gdscript import PARSER_VERSION
from godot_rag.domain.ids import analysis_id_for, message_id, sha256_hex, subject_token
from godot_rag.domain.ingest.archive import ArchiveLimits, archive_stem, detect_format, looks_like_archive_name
from godot_rag.domain.ingest.policy import (
    AST_KINDS,
    REASON_NESTED_PROJECT,
    SNIPPET_EXTENSION,
    IngestError,
    ProjectFiles,
    SourceFile,
    WalkLimits,
    decide_snippet,
    guess_snippet_kind,
    projects_from_expanded_text,
    scan_projects,
)
from godot_rag.domain.judging.project_index import PROJECT_INDEX_VERSION, ProjectIndex
from godot_rag.domain.judging.rules import RULES_JUDGE_VERSION
from godot_rag.domain.retrieval.knowledge import KB_DATA_VERSION
from godot_rag.domain.retrieval.query import RETRIEVAL_VERSION
from godot_rag.errors import AccessDeniedError, OverloadedError
from godot_rag.infra.bus import Bus
from godot_rag.infra.fetch import clone_git, extract_archive, parse_git_source, working_folder
from godot_rag.infra.store import Store
from godot_rag.pipeline.results import finalize_analysis
from godot_rag.prompts import JUDGE_PROMPT_VERSION
from godot_rag.settings import Settings, is_loopback_host
from godot_rag.stages import FILE_TASK, STAGE_VERSION, AnalysisStatus, FileRoute, file_subject
from godot_rag.v1 import messages_pb2 as pb

log = logging.getLogger(__name__)


def pipeline_version_for(settings: Settings | None) -> str:
    """Every version an analysis result depends on; part of the analysis id.

    A new parser, knowledge base, judge (rules version, or model + prompt
    version + cascade), project index or verdict rule gives a new analysis
    instead of returning one computed the old way.
    """
    judge = RULES_JUDGE_VERSION
    if settings is not None and settings.judge == "llm":
        judge = f"llm:{settings.llm_model}:{JUDGE_PROMPT_VERSION}:{settings.judge_cascade}:{RULES_JUDGE_VERSION}"
    # The project index decides which member accesses are evidence, so its version is part of it too.
    return "+".join(
        [PARSER_VERSION, CHUNKER_VERSION, RETRIEVAL_VERSION, KB_DATA_VERSION, judge, PROJECT_INDEX_VERSION, AGGREGATOR_VERSION]
    )


PIPELINE_VERSION = pipeline_version_for(None)

# The question asked when the user asks none (the CLI, the web form).
DEFAULT_PROMPT = "Is this Godot 3 or Godot 4, and what is the basis for converting it?"


@dataclass(frozen=True)
class Collected:
    """One project of a submission: it becomes one analysis."""

    project_id: str
    source_origin: str
    input_ref: str
    files: list[SourceFile]
    root: str = ""  # folder of its project.godot relative to the input; "" = the input's top


@dataclass(frozen=True)
class Submission:
    source_origin: str
    input_ref: str
    projects: list[Collected]  # in root path order, the input's top first


def _projects(base_id: str, origin: str, input_ref: str, projects: list[ProjectFiles]) -> Submission:
    def pid(root: str) -> str:
        return base_id if root == "" else f"{base_id}/{root}"

    collected = []
    for p in projects:
        files = [
            # The folder entry of a nested root names the project it went to.
            replace(f, excluded_reason=f"{REASON_NESTED_PROJECT} ({pid(posixpath.join(p.root, f.source_file.rstrip('/')))})")
            if f.excluded_reason == REASON_NESTED_PROJECT
            else f
            for f in p.files
        ]
        collected.append(Collected(pid(p.root), origin, input_ref, files, p.root))
    return Submission(origin, input_ref, collected)


def archive_limits(settings: Settings) -> ArchiveLimits:
    return ArchiveLimits(
        max_total_bytes=settings.archive_max_total_bytes,
        max_ratio=settings.archive_max_ratio,
        max_entries=settings.archive_max_entries,
    )


def _is_archive_file(p: Path) -> bool:
    if looks_like_archive_name(p.name):
        return True
    with open(p, "rb") as fh:
        return bool(detect_format(fh.read(1024)))


@contextmanager
def _from_archive_file(
    archive: Path, name: str, input_ref: str, project_id: str, settings: Settings, keep_text: bool, hold_data: bool
) -> Iterator[Submission]:
    with working_folder(settings.work_dir, "archive-") as work:
        tree = work / "tree"
        tree.mkdir()
        extra = extract_archive(archive, tree, archive_limits(settings), max_file_bytes=settings.max_file_bytes)
        projects = scan_projects(
            tree,
            max_bytes=settings.max_file_bytes,
            keep_text=keep_text,
            extra=extra,
            limits=walk_limits(settings),
            hold_data=hold_data,
        )
        yield _projects(project_id or f"archive:{archive_stem(name)}", "uploaded_file", input_ref, projects)


def walk_limits(settings: Settings) -> WalkLimits:
    return WalkLimits(max_entries=settings.walk_max_entries, max_bytes=settings.walk_max_bytes)


def check_server_path(path: str, settings: Settings, *, local_caller: bool) -> Path:
    """The resolved server-side path if this caller may read it; AccessDeniedError otherwise.

    - With GODOT_RAG_ALLOWED_ROOTS set, a path is readable when it resolves
      (links followed) inside one of them, whoever asks.
    - Without it, only a local caller of a loopback-only gateway: the user on
      this machine reading their own files, as the CLI does.
    - Everyone else sends content (an archive, expanded text, a snippet).
    """
    resolved = Path(path).expanduser().resolve()
    roots = settings.allowed_root_paths
    if roots:
        if any(resolved == r or resolved.is_relative_to(r) for r in roots):
            return resolved
        raise AccessDeniedError(f"{path}: not under a folder this gateway may read (GODOT_RAG_ALLOWED_ROOTS)")
    if local_caller and settings.loopback_only:
        return resolved
    raise AccessDeniedError(
        f"{path}: this gateway reads no paths of its own machine for remote callers; "
        "send the content instead (an archive or expanded text; the CLI does this)"
    )


def collect(**inputs: Any) -> Submission:
    """Any input form -> its projects, every file decided and its bytes held (``expand``, tests).

    Takes :func:`collecting`'s keywords. Git clones and archives are fetched
    into a working folder that is removed before this returns. Submissions use
    :func:`collecting`, which holds no file's bytes.
    """
    with collecting(**inputs, hold_data=True) as submission:
        return submission


@contextmanager
def collecting(
    *,
    path: str = "",
    expanded_text: str = "",
    snippet: str = "",
    snippet_kind: str = "",
    git_url: str = "",
    git_ref: str = "",
    archive: bytes = b"",
    archive_name: str = "",
    project_id: str = "",
    settings: Settings,
    keep_text: bool = False,
    local_caller: bool = False,
    hold_data: bool = False,
) -> Iterator[Submission]:
    """Any input form -> its projects, every file decided. Raises IngestError with a clear message.

    Without ``hold_data`` an included file keeps its sha256 and a reader, not
    its bytes: the submission reads, stores and lets go of one file at a time,
    so a project of any size costs the gateway one file (and one batch of
    blobs) of memory. Git clones and archives are fetched into a working folder
    under the data folder that lives until the block ends. Paths on this
    machine (a folder, a file, a local git repository) are read only when
    ``check_server_path`` lets this caller.
    """
    max_bytes = settings.max_file_bytes
    if git_url:
        source = parse_git_source(git_url)
        if source.local_path:
            check_server_path(source.local_path, settings, local_caller=local_caller)
        with working_folder(settings.work_dir, "git-") as work:
            got = clone_git(
                source,
                git_ref,
                work,
                archive_limits(settings),
                max_file_bytes=max_bytes,
                timeout_s=settings.git_timeout_s,
                max_repo_bytes=settings.git_max_bytes,
            )
            projects = scan_projects(
                work / "tree",
                max_bytes=max_bytes,
                keep_text=keep_text,
                extra=got.extra,
                limits=walk_limits(settings),
                hold_data=hold_data,
            )
            base = project_id or source.project_base + (f"@{git_ref}" if git_ref else "")
            yield _projects(base, source.origin, f"{source.display}@{got.commit}", projects)
        return
    if archive:
        name = archive_name or f"upload-{sha256_hex(archive)[:12]}"
        with working_folder(settings.work_dir, "upload-") as work:
            stored = work / "upload.bin"
            stored.write_bytes(archive)
            with _from_archive_file(stored, name, f"upload:{name}", project_id, settings, keep_text, hold_data) as got_archive:
                yield got_archive
        return
    if path:
        p = check_server_path(path, settings, local_caller=local_caller)
        if p.is_dir():
            projects = scan_projects(p, max_bytes=max_bytes, keep_text=keep_text, limits=walk_limits(settings), hold_data=hold_data)
            yield _projects(project_id or f"local:{p.resolve().name}", "local_directory", str(p.resolve()), projects)
            return
        if p.is_file():
            if _is_archive_file(p):
                with _from_archive_file(p, p.name, str(p.resolve()), project_id, settings, keep_text, hold_data) as got_file:
                    yield got_file
                return
            try:
                text = p.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise IngestError(f"{p} is neither a folder, an archive nor an expanded-text file (not UTF-8: {exc})") from exc
            projects = projects_from_expanded_text(text, max_bytes=max_bytes, keep_text=keep_text)
            name = p.name.rsplit(".", 1)[0]
            yield _projects(project_id or f"expanded:{name}", "expanded_text", str(p.resolve()), projects)
            return
        raise IngestError(f"no such file or folder: {p}")
    if expanded_text:
        projects = projects_from_expanded_text(expanded_text, max_bytes=max_bytes, keep_text=keep_text)
        digest = sha256_hex(expanded_text.encode("utf-8"))[:12]
        yield _projects(project_id or f"expanded:{digest}", "expanded_text", f"expanded:{digest}", projects)
        return
    if snippet:
        kind = snippet_kind or guess_snippet_kind(snippet)
        data = snippet.encode("utf-8")
        digest = sha256_hex(data)[:12]
        name = f"pasted://snippet-{digest}{SNIPPET_EXTENSION.get(kind, '.txt')}"
        f = decide_snippet(name, kind, data, max_bytes=max_bytes)
        pid = project_id or f"snippet:{digest}"
        yield Submission("pasted_snippet", name, [Collected(pid, "pasted_snippet", name, [f])])
        return
    raise IngestError("nothing to analyse: give a path, a git URL, an archive, expanded text or a snippet")


def content_of(f: SourceFile) -> bytes:
    """An included file's bytes: held, or read again from the input and checked against the sha256 decided on."""
    if f.read is None:
        return f.data
    try:
        data = f.read()
    except OSError as exc:
        raise IngestError(f"{f.source_file}: unreadable while it was submitted ({exc.strerror or exc})") from exc
    if sha256_hex(data) != f.sha256:
        # The manifest (and the analysis id) name the bytes decided on; other bytes would break that promise.
        raise IngestError(f"{f.source_file} changed while the project was submitted; submit it again")
    return data


# What one batch of file contents written to the store may hold: the gateway's memory per submission.
BLOB_BATCH_BYTES = 4 * 1024 * 1024


def _read_batch(files: list[SourceFile], start: int) -> tuple[list[tuple[str, bytes]], int]:
    """(sha256, bytes) of files[start:...] up to BLOB_BATCH_BYTES (at least one file), and where the next batch starts."""
    batch: list[tuple[str, bytes]] = []
    size, i = 0, start
    while i < len(files) and (not batch or size < BLOB_BATCH_BYTES):
        data = content_of(files[i])
        batch.append((files[i].sha256, data))
        size += len(data)
        i += 1
    return batch, i


async def store_contents(store: Store, files: list[SourceFile]) -> None:
    """Every included file's bytes into the store's blobs, one bounded batch at a time (reading off the event loop)."""
    included = [f for f in files if f.included]
    i = 0
    while i < len(included):
        batch, i = await asyncio.to_thread(_read_batch, included, i)
        await store.put_blobs(batch)
        del batch  # let go before the next batch is read: one batch held at a time, not two


def project_symbols(files: list[SourceFile]) -> tuple[str, dict[str, str]]:
    """The project index (JSON) and each script's scope (source_file -> JSON) from the included files' contents.

    Two passes over the files, each reading one file at a time (``content_of``): the index keeps
    declarations, not texts, so memory follows the project's symbols, not its size.
    """
    symbol_files = [f for f in files if f.included and f.source_kind in _SYMBOL_KINDS]

    def texts() -> Iterator[tuple[str, str]]:
        for f in symbol_files:
            try:
                yield f.source_file, content_of(f).decode("utf-8")
            except UnicodeDecodeError:
                continue  # the parser reports such a file; it simply adds no symbols

    if not any(f.source_file.endswith(".gd") for f in symbol_files):
        return "", {}
    index = ProjectIndex.build(texts())
    if not index.scripts:
        return "", {}
    scopes = {p: index.scope_for(p, t).to_json() for p, t in texts() if p in index.scripts}
    return index.to_json(), scopes


# Files whose contents say what the project's names are: scripts, scenes (node types,
# attached scripts) and project.godot (autoloads).
_SYMBOL_KINDS = frozenset({"gdscript", "scene", "project_config"})


async def submit(
    store: Store, bus: Bus, collected: Collected, prompt: str, pipeline_version: str = PIPELINE_VERSION
) -> tuple[str, bool]:
    """Record the analysis and publish its file tasks. Returns (analysis_id, created)."""
    manifest = [
        (f.source_file, f.source_kind, f.sha256 if f.included else f"excluded:{f.excluded_reason}") for f in collected.files
    ]
    aid = analysis_id_for(collected.project_id, prompt, manifest, pipeline_version)
    created = False
    if await store.get_analysis(aid) is None:
        # The contents first (content-addressed, so a repeat or a race writes nothing twice), one batch at
        # a time; then the analysis and its file list, which name them by sha256.
        await store_contents(store, collected.files)
        # Pure CPU over every script and scene (about a second for a large project): off the event loop.
        symbols, scopes = await asyncio.to_thread(project_symbols, collected.files)
        created = await store.create_analysis(
            analysis_id=aid,
            project_id=collected.project_id,
            prompt=prompt,
            source_origin=collected.source_origin,
            input_ref=collected.input_ref,
            pipeline_version=pipeline_version,
            files=[
                {
                    "source_file": f.source_file,
                    "source_kind": f.source_kind,
                    "included": f.included,
                    "excluded_reason": f.excluded_reason,
                    "sha256": f.sha256,
                    "size": f.size,
                }
                for f in collected.files
            ],
            project_symbols=symbols,
            symbols_version=PROJECT_INDEX_VERSION,
            symbol_scopes=scopes,
        )
    analysis = await store.get_analysis(aid)
    if analysis is not None and analysis.status != AnalysisStatus.RUNNING:
        return aid, created

    # New, or resubmitted while unfinished: (re)publish. Msg ids dedupe within
    # the window and every handler is idempotent, so this resumes, never doubles.
    # One trace per submission: its context rides in every file message, and
    # each stage's span continues it, so every hop of every chunk shares it.
    with trace.get_tracer("godot_rag.submit").start_as_current_span(
        "analysis",
        attributes={"godot_rag.analysis_id": aid, "godot_rag.project_id": collected.project_id},
    ):

        def file_task(f: SourceFile) -> tuple[str, bytes, str]:
            route = FileRoute.AST if f.source_kind in AST_KINDS else FileRoute.DIRECT
            req = pb.AnalysisRequest(
                analysis_id=aid,
                prompt=prompt,
                project_id=collected.project_id,
                source_file=f.source_file,
                source_kind=f.source_kind,
                source_sha256=f.sha256,
                source_origin=collected.source_origin,
            )
            return (
                file_subject(route, aid, subject_token(f.source_file)),
                pb.FileTask(analysis_id=aid, request=req, source_size=f.size).SerializeToString(),
                message_id(aid, f.source_file, FILE_TASK, STAGE_VERSION),
            )

        await bus.publish_all(file_task(f) for f in collected.files if f.included)
    if not any(f.included for f in collected.files):
        # Nothing to chunk: the verdict is computed right away from zero chunks.
        await finalize_analysis(store, aid)
    return aid, created


@dataclass(frozen=True)
class SubmittedProject:
    analysis_id: str
    project_id: str
    root: str
    created: bool
    files_included: int
    files_excluded: int


async def submit_all(
    store: Store, bus: Bus, submission: Submission, prompt: str, pipeline_version: str = PIPELINE_VERSION
) -> list[SubmittedProject]:
    """One analysis per project root, in root order."""
    out: list[SubmittedProject] = []
    for project in submission.projects:
        aid, created = await submit(store, bus, project, prompt, pipeline_version)
        included = sum(1 for f in project.files if f.included)
        out.append(SubmittedProject(aid, project.project_id, project.root, created, included, len(project.files) - included))
    return out


@dataclass(frozen=True)
class SubmitInput:
    """One submission as a caller gives it: exactly one input form set."""

    prompt: str
    path: str = ""
    expanded_text: str = ""
    snippet: str = ""
    snippet_kind: str = ""
    git_url: str = ""
    git_ref: str = ""
    archive: bytes = b""
    archive_name: str = ""
    project_id: str = ""
    # Who asks: ``client`` keys the per-client limit (a gRPC peer address, an HTTP remote);
    # ``local_caller`` says it connected over loopback (see check_server_path).
    client: str = ""
    local_caller: bool = False


def check_prompt(prompt: str, settings: Settings) -> str:
    """The prompt, stripped, or InvalidInputError: it rides in every file and chunk message, so its size is bounded."""
    if not prompt.strip():
        raise IngestError("a prompt is required")
    size = len(prompt.encode("utf-8"))
    if size > settings.max_prompt_bytes:
        raise IngestError(f"the prompt is {size} bytes, over the limit of {settings.max_prompt_bytes} (GODOT_RAG_MAX_PROMPT_BYTES)")
    return prompt


class ClientLimiter:
    """At most ``limit`` submissions running at once per client; the next one is refused, not queued.

    Reading an input (clone, extraction, walk) costs the gateway disk, memory and a
    thread: one client must not hold them all.
    """

    def __init__(self, limit: int):
        self.limit = limit
        self.running: dict[str, int] = {}

    @contextmanager
    def slot(self, client: str) -> Iterator[None]:
        key = client or "unknown"
        if self.running.get(key, 0) >= self.limit:
            raise OverloadedError(
                f"{key} already has {self.limit} submissions running (GODOT_RAG_MAX_SUBMISSIONS_PER_CLIENT); wait for one to finish"
            )
        self.running[key] = self.running.get(key, 0) + 1
        try:
            yield
        finally:
            self.running[key] -= 1
            if not self.running[key]:
                del self.running[key]


def client_of_peer(peer: str) -> tuple[str, bool]:
    """A gRPC peer ('ipv4:127.0.0.1:5000', 'ipv6:[::1]:5000', 'unix:...') -> (client key, is it loopback)."""
    kind, _, rest = peer.partition(":")
    if kind == "unix":
        return "unix", True
    if kind == "ipv6" and rest.startswith("["):
        host = rest[1 : rest.find("]")] if "]" in rest else rest
    else:
        host = rest.rsplit(":", 1)[0]
    return host, is_loopback_host(host)


_LIMITERS: dict[int, ClientLimiter] = {}


def _limiter(settings: Settings) -> ClientLimiter:
    # One per process and limit (a gateway has one Settings object; tests may use several).
    return _LIMITERS.setdefault(settings.max_submissions_per_client, ClientLimiter(settings.max_submissions_per_client))


async def collect_and_submit(
    store: Store, bus: Bus, settings: Settings, given: SubmitInput
) -> tuple[Submission, list[SubmittedProject]]:
    """Read the input (off the event loop: cloning, extracting and reading block), then submit each project.

    Every check on the caller's input (prompt size, access to server paths, the
    per-client limit) comes before anything is recorded or published.
    """
    prompt = check_prompt(given.prompt, settings)
    if not any((given.path, given.expanded_text, given.snippet, given.git_url, given.archive)):
        raise IngestError("nothing to analyse: set path, git_url, archive, expanded_text or snippet")
    with _limiter(settings).slot(given.client), ExitStack() as held:
        # The input stays open (a working folder for clones and archives) until every file is stored:
        # files are read again one at a time, never held together.
        submission = await asyncio.to_thread(
            held.enter_context,
            collecting(
                path=given.path,
                expanded_text=given.expanded_text,
                snippet=given.snippet,
                snippet_kind=given.snippet_kind,
                git_url=given.git_url,
                git_ref=given.git_ref,
                archive=given.archive,
                archive_name=given.archive_name,
                project_id=given.project_id,
                settings=settings,
                local_caller=given.local_caller,
            ),
        )
        try:
            if not any(project.files for project in submission.projects):
                # An empty folder or archive: nothing would be analysed, and a verdict of no files says
                # nothing. Every caller (gRPC, the web screen and its JSON API, the CLI) gets this answer.
                raise IngestError("no files in the input: the folder or archive is empty")
            return submission, await submit_all(store, bus, submission, prompt, pipeline_version_for(settings))
        finally:
            # Removing a working folder of thousands of files blocks: off the event loop too.
            await asyncio.to_thread(held.close)
