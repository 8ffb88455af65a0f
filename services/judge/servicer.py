from __future__ import annotations

import grpc

from godot_rag import convert
from godot_rag.v1 import services_pb2_grpc as sgrpc
from services.judge.backend import JudgeBackend


class JudgeServicer(sgrpc.JudgeServicer):
    def __init__(self, backend: JudgeBackend):
        self.backend = backend

    async def Judge(self, request, context: grpc.aio.ServicerContext):
        if not request.chunk.code_text:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the request carries no chunk")
        judgment = await self.backend.judge(request)
        return convert.judgment_to_pb(judgment)
