from __future__ import annotations

import asyncio
from dataclasses import replace

from godot_rag.domain.chunking.direct import CHUNKER_VERSION, chunk_direct
from godot_rag.domain.models import ChunkingResult
from godot_rag.infra.bus import STREAM_FILES, Delivery, StageSpec
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.chunking import handle_file_task

SPEC = StageSpec(durable="chunker", stream=STREAM_FILES, filter_subjects=["grag.file.direct.>"], ack_wait_s=60, max_ack_pending=4)

# Kinds the direct chunker has no dedicated rules for are cut as plain text blocks.
_DIRECT_MODES = {"project_config", "scene", "resource", "import_meta", "uid", "ignore", "config", "text"}


def direct_kind(source_kind: str) -> str:
    return source_kind if source_kind in _DIRECT_MODES else "text"


def _chunk(source_file: str, source_kind: str, data: bytes, expected_sha256: str) -> ChunkingResult:
    result = chunk_direct(source_file, direct_kind(source_kind), data, expected_sha256=expected_sha256 or None)
    return replace(result, source_kind=source_kind)


async def start(ctx: ServiceContext) -> list[asyncio.Task]:
    async def handle(delivery: Delivery) -> None:
        await handle_file_task(ctx, delivery.data, _chunk, CHUNKER_VERSION)

    return [asyncio.create_task(ctx.bus.run_stage(SPEC, handle, ctx.dead_letter, ctx.stop))]
