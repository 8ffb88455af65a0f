from __future__ import annotations

import asyncio

from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.chunking import handle_file_task
from godot_rag.pipeline.stage_runner import consume
from godot_rag.stages import PARSER


async def start(ctx: ServiceContext) -> list[asyncio.Task]:
    async def handle(delivery: Delivery) -> None:
        await handle_file_task(ctx, delivery.data)

    return [consume(ctx, PARSER, handle)]
