from __future__ import annotations

import asyncio

from godot_rag.domain.chunking.gdscript import PARSER_VERSION, parse_gdscript
from godot_rag.domain.models import ChunkingResult
from godot_rag.infra.bus import STREAM_FILES, Delivery, StageSpec
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.chunking import handle_file_task

SPEC = StageSpec(durable="parser", stream=STREAM_FILES, filter_subjects=["grag.file.ast.>"], ack_wait_s=60, max_ack_pending=4)


def _parse(source_file: str, source_kind: str, data: bytes, expected_sha256: str) -> ChunkingResult:
    return parse_gdscript(source_file, data, expected_sha256=expected_sha256 or None)


async def start(ctx: ServiceContext) -> list[asyncio.Task]:
    async def handle(delivery: Delivery) -> None:
        await handle_file_task(ctx, delivery.data, _parse, PARSER_VERSION)

    return [asyncio.create_task(ctx.bus.run_stage(SPEC, handle, ctx.dead_letter, ctx.stop))]
