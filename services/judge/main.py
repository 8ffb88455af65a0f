from __future__ import annotations

import asyncio

from godot_rag.domain.rules_judge import RenameIndex
from godot_rag.infra.service import run_service
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.judge import consumer
from services.judge.backend import RulesBackend
from services.judge.servicer import JudgeServicer


def main() -> None:
    settings = load_settings()
    holder: dict = {}

    def register(server, ctx):
        servicer = JudgeServicer(backend=None)  # type: ignore[arg-type]
        holder["servicer"] = servicer
        services_pb2_grpc.add_JudgeServicer_to_server(servicer, server)
        return [services_pb2.DESCRIPTOR.services_by_name["Judge"].full_name]

    async def start(ctx):
        index = RenameIndex.from_payloads(await ctx.store.api_mapping_payloads())
        backend = RulesBackend(index)
        holder["servicer"].backend = backend
        return await consumer.start(ctx, backend)

    asyncio.run(run_service("judge", settings, settings.judge_port, register, start))
