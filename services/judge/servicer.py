from __future__ import annotations

from dataclasses import replace

import grpc

from godot_rag import convert
from godot_rag.domain.judging.backends import JudgeBackend, contract_json
from godot_rag.domain.retrieval.query import primary_intent
from godot_rag.errors import InvalidInputError, RetryableError
from godot_rag.infra.grpc_edge import grpc_errors
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2_grpc as sgrpc


class JudgeServicer(sgrpc.JudgeServicer):
    """gRPC Judge: one JudgmentRequest -> one validated (or visibly failed) Judgment."""

    def __init__(self, backend: JudgeBackend | None):
        self.backend = backend

    @grpc_errors
    async def Judge(self, request: pb.JudgmentRequest, context: grpc.aio.ServicerContext) -> pb.Judgment:
        if self.backend is None:
            raise RetryableError("the judge is still loading its knowledge")
        judged = convert.request_from_pb(request)
        if not judged.chunk.code_text:
            raise InvalidInputError("the request carries no chunk")
        if judged.chunk.span.start_line < 1:
            raise InvalidInputError("the chunk carries no line span")
        judged = replace(judged, intent=judged.intent or primary_intent(judged.prompt))
        judged = replace(judged, judgment_contract=contract_json(judged))
        return convert.judgment_to_pb(await self.backend.judge(judged))
