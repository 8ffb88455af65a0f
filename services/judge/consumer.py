from __future__ import annotations

import asyncio

from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.judging import JudgeStage
from godot_rag.pipeline.stage_runner import consume, run_chunk_stage, run_chunk_stage_batch
from godot_rag.stages import JUDGE, Stage


async def start(ctx: ServiceContext, stage: JudgeStage) -> list[asyncio.Task]:
    async def handle(delivery: Delivery) -> None:
        await run_chunk_stage(ctx, Stage.JUDGE, delivery, stage)

    async def handle_batch(deliveries: list[Delivery]) -> list[BaseException | None]:
        return await run_chunk_stage_batch(ctx, Stage.JUDGE, deliveries, stage, stage.run_batch)

    return [consume(ctx, JUDGE, handle, handle_batch)]
