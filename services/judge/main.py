from __future__ import annotations

import asyncio

from godot_rag.domain.judging.backends import JudgeBackend
from godot_rag.domain.judging.rules import RenameIndex, shipped_vocabulary
from godot_rag.errors import InvalidInputError
from godot_rag.infra.service import run_main, run_service
from godot_rag.pipeline.judging import JudgeStage, build_backend
from godot_rag.settings import Settings, load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.judge import consumer
from services.judge.servicer import JudgeServicer


def make_backend(settings: Settings, index: RenameIndex) -> JudgeBackend:
    try:
        return build_backend(settings, index, settings.judge)
    except InvalidInputError as exc:
        raise SystemExit(f"judge: {exc}") from exc


def main() -> None:
    settings = load_settings()
    holder: dict = {}

    def register(server, ctx):
        servicer = JudgeServicer(backend=None)
        holder["servicer"] = servicer
        services_pb2_grpc.add_JudgeServicer_to_server(servicer, server)
        return [services_pb2.DESCRIPTOR.services_by_name["Judge"].full_name]

    async def start(ctx):
        # The class references are read from the packaged data (not the KB
        # tables): they are the same files the knowledge base is built from.
        vocabulary = await asyncio.to_thread(shipped_vocabulary)
        index = RenameIndex.from_payloads(await ctx.store.api_mapping_payloads(), vocabulary)
        backend = make_backend(settings, index)
        holder["servicer"].backend = backend
        return await consumer.start(ctx, JudgeStage(ctx, backend, index))

    run_main(run_service("judge", settings, settings.judge_port, register, start), settings)
