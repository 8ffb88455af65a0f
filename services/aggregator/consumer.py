from __future__ import annotations

import asyncio

from godot_rag.infra.bus import Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.aggregation import AggregateStage, handle_aggregate
from godot_rag.pipeline.stage_runner import consume
from godot_rag.stages import AGGREGATOR


async def start(ctx: ServiceContext) -> list[asyncio.Task]:
    stage = AggregateStage(ctx)

    async def handle(delivery: Delivery) -> None:
        await handle_aggregate(ctx, stage, delivery)

    return [consume(ctx, AGGREGATOR, handle)]
