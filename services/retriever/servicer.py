from __future__ import annotations

import grpc

from godot_rag import convert
from godot_rag.domain.retrieval.query import build_retriever_query
from godot_rag.errors import RetryableError
from godot_rag.infra.embedder import EmbeddingModelMismatch
from godot_rag.infra.service import ServiceContext
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc
from services.retriever.consumer import QueryEmbedder, retrieve


class RetrieverServicer(sgrpc.RetrieverServicer):
    """Retriever.Search takes a RetrieverQuery only: there is no field for a path, chunk id or order."""

    def __init__(self, ctx: ServiceContext, embedder: QueryEmbedder | None = None):
        self.ctx = ctx
        self.embedder = embedder

    async def Search(self, request: spb.SearchRequest, context: grpc.aio.ServicerContext):
        query = convert.query_from_pb(request.query)
        if not query.query_terms and not query.raw_chunk_text:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the query has neither terms nor chunk text")
        limit = request.limit_per_table or self.ctx.settings.retrieval_limit_per_table
        try:
            hits, kb_version = await retrieve(self.ctx, query, limit, self.embedder)
        except EmbeddingModelMismatch as exc:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except RetryableError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return spb.SearchResponse(hits=[convert.hit_to_pb(h) for h in hits], kb_version=kb_version)

    async def BuildQuery(self, request: spb.BuildQueryRequest, context: grpc.aio.ServicerContext):
        chunk = convert.chunk_from_pb(request.chunk)
        return convert.query_to_pb(build_retriever_query(prompt=request.prompt, chunk=chunk))
