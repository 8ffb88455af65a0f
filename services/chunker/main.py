from __future__ import annotations

from godot_rag.infra.service import run_main, run_service
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.chunker import consumer
from services.chunker.servicer import ChunkerServicer


def main() -> None:
    settings = load_settings()

    def register(server, ctx):
        services_pb2_grpc.add_ChunkerServicer_to_server(ChunkerServicer(), server)
        return [services_pb2.DESCRIPTOR.services_by_name["Chunker"].full_name]

    run_main(run_service("chunker", settings, settings.chunker_port, register, consumer.start), settings)
