from __future__ import annotations

from godot_rag.infra.embedder import embedder_from_settings
from godot_rag.infra.service import run_main, run_service
from godot_rag.pipeline.retrieval import QueryEmbedder, RetrieveStage
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.retriever import consumer
from services.retriever.servicer import RetrieverServicer


def main() -> None:
    settings = load_settings()
    # Built here, loaded on the first query (the model is not needed to start).
    backend = embedder_from_settings(settings, query_time=True)
    holder: dict[str, RetrieveStage] = {}

    def register(server, ctx):
        embedder = QueryEmbedder(backend, ctx.store) if backend is not None else None
        holder["stage"] = RetrieveStage(ctx, embedder)
        services_pb2_grpc.add_RetrieverServicer_to_server(RetrieverServicer(holder["stage"]), server)
        return [services_pb2.DESCRIPTOR.services_by_name["Retriever"].full_name]

    async def start_consumers(ctx):
        return await consumer.start(ctx, holder["stage"])

    run_main(run_service("retriever", settings, settings.retriever_port, register, start_consumers), settings)
