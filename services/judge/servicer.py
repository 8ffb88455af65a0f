from __future__ import annotations

import json

import grpc

from godot_rag.domain.judging.contract import contract_for
from godot_rag.domain.retrieval.query import primary_intent
from godot_rag.errors import RetryableError
from godot_rag.infra.llm_client import LLMRequestError
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2_grpc as sgrpc
from services.judge.backend import JudgeBackend, scope_of


class JudgeServicer(sgrpc.JudgeServicer):
    """gRPC Judge: one JudgmentRequest -> one validated (or visibly failed) Judgment."""

    def __init__(self, backend: JudgeBackend | None):
        self.backend = backend

    async def Judge(self, request: pb.JudgmentRequest, context: grpc.aio.ServicerContext) -> pb.Judgment:
        if self.backend is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the judge is still loading its knowledge")
        if not request.chunk.code_text:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the request carries no chunk")
        if request.chunk.span.start_line < 1:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the chunk carries no line span")
        if not request.intent:
            request.intent = primary_intent(request.prompt)
        if not request.judgment_contract:
            request.judgment_contract = json.dumps(contract_for(scope_of(request)), sort_keys=True)
        try:
            return await self.backend.judge(request)
        except RetryableError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except LLMRequestError as exc:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
