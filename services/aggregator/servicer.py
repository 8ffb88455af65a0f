from __future__ import annotations

import grpc

from godot_rag.infra.grpc_edge import grpc_errors
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.results import list_chunks, verdict_of
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


class AggregatorServicer(sgrpc.AggregatorServicer):
    def __init__(self, ctx: ServiceContext):
        self.ctx = ctx

    @grpc_errors
    async def GetVerdict(self, request: spb.VerdictRequest, context: grpc.aio.ServicerContext) -> pb.Verdict:
        return await verdict_of(self.ctx.store, request.analysis_id)

    @grpc_errors
    async def ListChunks(self, request: spb.ListChunksRequest, context: grpc.aio.ServicerContext) -> spb.ListChunksResponse:
        return await list_chunks(self.ctx.store, request.analysis_id, request.source_file)
