from __future__ import annotations

import sys

from godot_rag.infra.embedder import embedder_from_settings
from godot_rag.infra.service import run_main, run_service
from godot_rag.pipeline.retrieval import QueryEmbedder, RetrieveStage
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.retriever import consumer
from services.retriever.servicer import RetrieverServicer

# The query model runs in a worker thread and releases the GIL while it computes; when it is done it waits
# for the event loop's thread to hand the GIL back, up to the switch interval (5 ms by default, nearly a whole
# forward pass). At 0.5 ms the model starts its next text sooner: 99.3-101.8 against 92.0-100.5 chunks/s
# at 300 files, three runs each, alternated (docs/benchmarks.md).
GIL_SWITCH_INTERVAL_S = 0.0005


def main() -> None:
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    settings = load_settings()
    # Built here, loaded in the background once the service is up (the model is not needed to start).
    backend = embedder_from_settings(settings, query_time=True)
    holder: dict[str, RetrieveStage] = {}

    def register(server, ctx):
        embedder = QueryEmbedder(backend, ctx.store) if backend is not None else None
        holder["stage"] = RetrieveStage(ctx, embedder)
        services_pb2_grpc.add_RetrieverServicer_to_server(RetrieverServicer(holder["stage"]), server)
        return [services_pb2.DESCRIPTOR.services_by_name["Retriever"].full_name]

    async def start_consumers(ctx):
        return await consumer.start(ctx, holder["stage"])

    try:
        run_main(run_service("retriever", settings, settings.retriever_port, register, start_consumers), settings)
    finally:
        if "stage" in holder:
            holder["stage"].close()
