from __future__ import annotations

from godot_rag.infra.service import run_main, run_service
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.parser import consumer
from services.parser.servicer import ParserServicer


def main() -> None:
    settings = load_settings()

    def register(server, ctx):
        services_pb2_grpc.add_ParserServicer_to_server(ParserServicer(), server)
        return [services_pb2.DESCRIPTOR.services_by_name["Parser"].full_name]

    run_main(run_service("parser", settings, settings.parser_port, register, consumer.start), settings)
