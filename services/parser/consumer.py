from __future__ import annotations

import asyncio

from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.chunking import BytesInFlight, handle_file_task, handle_file_tasks
from godot_rag.pipeline.stage_runner import consume
from godot_rag.stages import PARSER


async def start(ctx: ServiceContext) -> list[asyncio.Task]:
    # The largest file a submission accepts is the most this process parses and holds at once.
    budget = BytesInFlight(ctx.settings.max_file_bytes)

    async def handle(delivery: Delivery) -> None:
        await handle_file_task(ctx, delivery.data, budget=budget)

    async def handle_batch(deliveries: list[Delivery]) -> list[BaseException | None]:
        return await handle_file_tasks(ctx, deliveries, budget=budget)

    return [consume(ctx, PARSER, handle, handle_batch)]
