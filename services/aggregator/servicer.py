from __future__ import annotations

import grpc

from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.results import chunk_results, verdict_pb
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


class AggregatorServicer(sgrpc.AggregatorServicer):
    def __init__(self, ctx: ServiceContext):
        self.ctx = ctx

    async def GetVerdict(self, request: spb.VerdictRequest, context: grpc.aio.ServicerContext):
        analysis = await self.ctx.store.get_analysis(request.analysis_id)
        if analysis is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no analysis {request.analysis_id}")
        verdict = verdict_pb(await self.ctx.store.get_verdict(request.analysis_id))
        if verdict is None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"analysis {request.analysis_id} is still running")
        return verdict

    async def ListChunks(self, request: spb.ListChunksRequest, context: grpc.aio.ServicerContext):
        analysis = await self.ctx.store.get_analysis(request.analysis_id)
        if analysis is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no analysis {request.analysis_id}")
        results = await chunk_results(self.ctx.store, request.analysis_id, request.source_file, analysis["status"] != "done")
        return spb.ListChunksResponse(chunks=[
            spb.ChunkStatus(trace=r.trace, span=r.span, status=r.status, judgment=r.judgment, last_error=r.last_error)
            for r in results
        ])
