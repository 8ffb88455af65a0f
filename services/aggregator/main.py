from __future__ import annotations

from godot_rag.infra.service import run_main, run_service
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.aggregator import consumer
from services.aggregator.servicer import AggregatorServicer


def main() -> None:
    settings = load_settings()

    def register(server, ctx):
        services_pb2_grpc.add_AggregatorServicer_to_server(AggregatorServicer(ctx), server)
        return [services_pb2.DESCRIPTOR.services_by_name["Aggregator"].full_name]

    run_main(run_service("aggregator", settings, settings.aggregator_port, register, consumer.start), settings)
