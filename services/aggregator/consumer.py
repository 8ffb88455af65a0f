from __future__ import annotations

import asyncio

from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.aggregation import AggregateStage, handle_aggregate, handle_aggregate_batch
from godot_rag.pipeline.stage_runner import consume
from godot_rag.stages import AGGREGATOR


async def start(ctx: ServiceContext) -> list[asyncio.Task]:
    stage = AggregateStage(ctx)

    async def handle(delivery: Delivery) -> None:
        await handle_aggregate(ctx, stage, delivery)

    async def handle_batch(deliveries: list[Delivery]) -> list[BaseException | None]:
        return await handle_aggregate_batch(ctx, stage, deliveries)

    return [consume(ctx, AGGREGATOR, handle, handle_batch)]
