from __future__ import annotations

import asyncio

from godot_rag.infra.metrics import poll_analyses
from godot_rag.infra.service import run_main, run_service
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2, services_pb2_grpc
from services.gateway import web
from services.gateway.servicer import AnalysisServicer


def main() -> None:
    settings = load_settings()

    def register(server, ctx):
        services_pb2_grpc.add_AnalysisServiceServicer_to_server(AnalysisServicer(ctx), server)
        return [services_pb2.DESCRIPTOR.services_by_name["AnalysisService"].full_name]

    async def start_web(ctx):
        ctx.background.append(asyncio.create_task(poll_analyses(ctx.store, settings.metrics_poll_s, ctx.stop)))
        return [asyncio.create_task(web.serve(ctx, settings.host, settings.web_port))]

    run_main(run_service("gateway", settings, settings.gateway_port, register, start_web), settings)
