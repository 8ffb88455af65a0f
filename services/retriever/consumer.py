from __future__ import annotations

import asyncio

from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.retrieval import RetrieveStage
from godot_rag.pipeline.stage_runner import consume, run_chunk_stage, run_chunk_stage_batch
from godot_rag.stages import RETRIEVER, Stage


async def start(ctx: ServiceContext, stage: RetrieveStage) -> list[asyncio.Task]:
    async def handle(delivery: Delivery) -> None:
        await run_chunk_stage(ctx, Stage.RETRIEVE, delivery, stage)

    async def handle_batch(deliveries: list[Delivery]) -> list[BaseException | None]:
        return await run_chunk_stage_batch(ctx, Stage.RETRIEVE, deliveries, stage, stage.run_batch)

    await stage.warm_up_within()
    return [consume(ctx, RETRIEVER, handle, handle_batch)]
