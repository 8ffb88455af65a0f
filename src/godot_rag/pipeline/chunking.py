"""The chunking stage shared by the parser (.gd) and the chunker (everything else).

File task in -> cached or fresh chunking -> contract validation -> chunks committed
-> one retrieve task per chunk + a file-done event. Idempotent: a redelivered
file task finds its chunks committed and only republishes (deduped by id).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from opentelemetry import trace

from godot_rag import convert
from godot_rag.domain.chunking.files import chunk_file, producer_version
from godot_rag.domain.chunking.validation import validate_chunking
from godot_rag.domain.ids import message_id, subject_token
from godot_rag.domain.models import PARSE_FAILED, ChunkingResult
from godot_rag.errors import PoisonError, RetryableError
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


async def handle_file_task(ctx: ServiceContext, data: bytes, chunk_fn: ChunkFn = _chunk_file, version: str | None = None) -> None:
    task = pb.FileTask.FromString(data)
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
