"""The chunking stage shared by the parser (.gd) and the chunker (everything else).

File task in -> cached or fresh chunking -> contract validation -> chunks committed
-> one retrieve task per chunk + a file-done event. Idempotent: a redelivered
file task finds its chunks committed and only republishes (deduped by id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence

from opentelemetry import trace

from godot_rag import convert
from godot_rag.domain.chunking.files import chunk_file, producer_version
from godot_rag.domain.chunking.validation import validate_chunking
from godot_rag.domain.ids import message_id, subject_token
from godot_rag.domain.models import PARSE_FAILED, ChunkingResult
from godot_rag.errors import PoisonError, RetryableError
from godot_rag.infra.bus import Delivery
from godot_rag.infra.rows import FileTaskInputs
from godot_rag.infra.service import ServiceContext
from godot_rag.stages import FILE_DONE, STAGE_VERSION, FileStatus, Stage, chunk_subject
from godot_rag.v1 import messages_pb2 as pb

log = logging.getLogger(__name__)


# (source_file, source_kind, data, expected_sha256) -> result; chunk_file unless a test injects a faulty one.
ChunkFn = Callable[[str, str, bytes, str | None], ChunkingResult]


def _chunk_file(source_file: str, source_kind: str, data: bytes, expected_sha256: str | None) -> ChunkingResult:
    return chunk_file(source_file, source_kind, data, expected_sha256=expected_sha256)


async def chunk_output_for(req: pb.AnalysisRequest, data: bytes, chunk_fn: ChunkFn = _chunk_file) -> tuple[dict, bool]:
    """The chunking output as a dict, computed now, and whether it may be kept in the reuse cache."""
    # Parsing and validating a large file is CPU for seconds: off the event loop, so progress
    # acks of this and other messages and the health checks go on meanwhile.
    result = await asyncio.to_thread(chunk_fn, req.source_file, req.source_kind, data, req.source_sha256 or None)
    problems = await asyncio.to_thread(validate_chunking, data, result, [(c.chunk_id, c.chunk_order) for c in result.chunks])
    if problems and result.status != PARSE_FAILED:
        output = convert.to_dict(convert.chunking_to_pb(result, req.project_id))
        output["status"] = PARSE_FAILED
        output["chunks"] = []
        output["errors"] = [
            *output.get("errors", []),
            *(
                {"line": 0, "column": 0, "end_line": 0, "end_column": 0, "message": f"validation {p.rule}: {p.message}"}
                for p in problems
            ),
        ]
        return output, False
    # Chunk ids start with the file path, so the cache only serves the same path.
    # A failed result (sha mismatch, bad bytes) is never cached: it describes
    # this delivery's content, not what the sha256 key names.
    return convert.to_dict(convert.chunking_to_pb(result, req.project_id)), result.status != PARSE_FAILED


def _content(req: pb.AnalysisRequest, inputs: FileTaskInputs) -> bytes:
    if inputs.blob is None:
        raise RetryableError(f"content {req.source_sha256} of {req.source_file} not in the store yet")
    return inputs.blob


async def _committed_output(
    ctx: ServiceContext, req: pb.AnalysisRequest, inputs: FileTaskInputs, chunk_fn: ChunkFn, version: str
) -> dict:
    """The chunks a redelivered task republishes for a file already chunked (or failed).

    The cache is keyed by content, not path: an entry written for identical
    content at another path carries that path's chunk ids, so it only serves
    this file when its source_file is this one; otherwise the chunks are cut
    again (deterministic, so the same ids the first delivery committed).
    """
    if inputs.file.status != FileStatus.CHUNKED:
        return {"chunks": [], "status": inputs.file.parse_status}
    if inputs.cached is not None:
        return inputs.cached
    output, cacheable = await chunk_output_for(req, _content(req, inputs), chunk_fn)
    if cacheable:
        await ctx.store.put_chunking_cache(req.source_sha256, req.source_kind, version, output)
    return output


class BytesInFlight:
    """At most ``limit`` bytes of file content read, parsed and held at once by one process.

    A file stage handles many file tasks at once (their reads and saves batch),
    but parsing costs memory in proportion to the file: a 2 MB script of small
    functions peaks at about 230 MB. Each task holds its file's size from its
    read to its last publish, so a few large files take turns while small ones
    go on together; a file larger than the limit runs alone. Tasks start in the
    order they asked, so a large file is not passed over by small ones for ever
    (a cancelled wait leaves the line).
    """

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.held = 0
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()

    @contextlib.asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        size = min(max(size, 1), self.limit)
        await self._acquire(size)
        try:
            yield
        finally:
            self.held -= size
            self._grant()

    async def _acquire(self, size: int) -> None:
        if not self._waiting and self.held + size <= self.limit:
            self.held += size
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((size, granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                # Granted as it was cancelled: the bytes go back.
                self.held -= size
            else:
                self._waiting.remove((size, granted))
            self._grant()
            raise

    def _grant(self) -> None:
        """Start the waiting tasks, first come first served, while their bytes fit."""
        while self._waiting:
            size, granted = self._waiting[0]
            if granted.done():
                self._waiting.popleft()
                continue
            if self.held + size > self.limit:
                return
            self._waiting.popleft()
            self.held += size
            granted.set_result(None)


async def handle_file_task(
    ctx: ServiceContext,
    data: bytes,
    chunk_fn: ChunkFn = _chunk_file,
    version: str | None = None,
    budget: BytesInFlight | None = None,
) -> None:
    task = pb.FileTask.FromString(data)
    if budget is None:
        await _handle_file_task(ctx, task, chunk_fn, version)
        return
    # A task published before the size was carried counts as the largest file: it runs alone.
    async with budget.hold(task.source_size if task.HasField("source_size") else budget.limit):
        await _handle_file_task(ctx, task, chunk_fn, version)


async def _handle_file_task(ctx: ServiceContext, task: pb.FileTask, chunk_fn: ChunkFn, version: str | None) -> None:
    req = task.request
    aid = task.analysis_id
    trace.get_current_span().set_attribute("godot_rag.source_file", req.source_file)
    version = version or producer_version(req.source_kind)
    # The file's row, its cached chunking and (when nothing is cached for its path) its content: one statement.
    inputs = await ctx.store.file_task_inputs(aid, req.source_file, req.source_sha256, req.source_kind, version)
    if inputs is None:
        raise PoisonError(f"file {req.source_file} of analysis {aid} is not recorded")
    if inputs.file.status == FileStatus.QUEUED:
        if inputs.cached is not None:
            output, cache_as = {**inputs.cached, "reused": True}, None
        else:
            output, cacheable = await chunk_output_for(req, _content(req, inputs), chunk_fn)
            cache_as = (req.source_sha256, req.source_kind, version) if cacheable else None
        # The chunks, their stage rows, the file's status and the cache entry: one transaction.
        await ctx.store.save_file_chunks(aid, req.source_file, output, cache_as=cache_as)
        log.info("%s: %s -> %d chunks (%s)", ctx.name, req.source_file, len(output.get("chunks", [])), output.get("status"))
    else:
        output = await _committed_output(ctx, req, inputs, chunk_fn, version)

    def retrieve_task(c: dict) -> tuple[str, bytes, str]:
        chunk_trace = pb.ChunkTrace(
            project_id=req.project_id,
            source_file=req.source_file,
            source_sha256=req.source_sha256,
            chunk_id=c["chunk_id"],
            chunk_order=c["chunk_order"],
            chunk_kind=c["chunk_kind"],
        )
        return (
            chunk_subject(Stage.RETRIEVE, aid, subject_token(c["chunk_id"])),
            pb.ChunkTask(analysis_id=aid, trace=chunk_trace).SerializeToString(),
            message_id(aid, c["chunk_id"], Stage.RETRIEVE, STAGE_VERSION),
        )

    chunks = output.get("chunks", [])
    done = pb.FileDone(analysis_id=aid, source_file=req.source_file, status=output.get("status", ""), chunk_count=len(chunks))
    # The file-done event only asks the aggregator to check completion, which reads the committed rows: it needs
    # no order among these messages, so they go out together.
    await ctx.bus.publish_all(
        [
            *map(retrieve_task, chunks),
            (
                chunk_subject(FILE_DONE, aid, subject_token(req.source_file)),
                done.SerializeToString(),
                message_id(aid, req.source_file, FILE_DONE, STAGE_VERSION),
            ),
        ]
    )


async def handle_file_tasks(
    ctx: ServiceContext, deliveries: Sequence[Delivery], chunk_fn: ChunkFn = _chunk_file, budget: BytesInFlight | None = None
) -> list[BaseException | None]:
    """``handle_file_task`` on a batch of file tasks at once, each under its own message's span: their reads
    are one statement and their saves one transaction (infra/batching.py). Every task keeps its own
    outcome (None: handled, else the error the bus maps for that message alone)."""

    async def one(delivery: Delivery) -> None:
        span = delivery.span
        with trace.use_span(span, end_on_exit=False) if span is not None else contextlib.nullcontext():
            await handle_file_task(ctx, delivery.data, chunk_fn, budget=budget)

    results = await asyncio.gather(*(one(d) for d in deliveries), return_exceptions=True)
    return [r if isinstance(r, BaseException) else None for r in results]
