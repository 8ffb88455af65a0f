from __future__ import annotations

import asyncio

from godot_rag.infra.service import run_service
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.retriever import consumer
from services.retriever.servicer import RetrieverServicer


def main() -> None:
    settings = load_settings()

    def register(server, ctx):
        services_pb2_grpc.add_RetrieverServicer_to_server(RetrieverServicer(ctx), server)
        return [services_pb2.DESCRIPTOR.services_by_name["Retriever"].full_name]

    asyncio.run(run_service("retriever", settings, settings.retriever_port, register, consumer.start))
