from __future__ import annotations

import grpc

from godot_rag import convert
from godot_rag.domain.retrieval.query import build_retriever_query
from godot_rag.errors import InvalidInputError
from godot_rag.infra.grpc_edge import grpc_errors
from godot_rag.pipeline.retrieval import RetrieveStage
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


class RetrieverServicer(sgrpc.RetrieverServicer):
    """Retriever.Search takes a RetrieverQuery only: there is no field for a path, chunk id or order."""

    def __init__(self, stage: RetrieveStage):
        self.stage = stage

    @grpc_errors
    async def Search(self, request: spb.SearchRequest, context: grpc.aio.ServicerContext) -> spb.SearchResponse:
        query = convert.query_from_pb(request.query)
        if not query.query_terms and not query.raw_chunk_text:
            raise InvalidInputError("the query has neither terms nor chunk text")
        hits, kb_version = await self.stage.search(query, request.limit_per_table)
        return spb.SearchResponse(hits=[convert.hit_to_pb(h) for h in hits], kb_version=kb_version)

    @grpc_errors
    async def BuildQuery(self, request: spb.BuildQueryRequest, context: grpc.aio.ServicerContext) -> pb.RetrieverQuery:
        chunk = convert.chunk_from_pb(request.chunk)
        return convert.query_to_pb(build_retriever_query(prompt=request.prompt, chunk=chunk))
