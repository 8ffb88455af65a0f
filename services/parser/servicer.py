from __future__ import annotations

import asyncio

import grpc

from godot_rag import convert
from godot_rag.domain.chunking.files import chunk_file
from godot_rag.domain.chunking.gdscript import SOURCE_KIND
from godot_rag.domain.ingest.policy import check_source_file
from godot_rag.errors import InvalidInputError
from godot_rag.infra.grpc_edge import grpc_errors
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


class ParserServicer(sgrpc.ParserServicer):
    """Parser.Parse as a standalone call: one .gd file in, its AST chunks out."""

    @grpc_errors
    async def Parse(self, request: spb.ParseRequest, context: grpc.aio.ServicerContext) -> pb.ChunkingOutput:
        if request.source_kind and request.source_kind != SOURCE_KIND:
            raise InvalidInputError(f"the parser takes gdscript, not {request.source_kind!r}")
        if not request.source_file:
            raise InvalidInputError("source_file is required")
        check_source_file(request.source_file)
        result = await asyncio.to_thread(
            chunk_file, request.source_file, SOURCE_KIND, request.source_text, expected_sha256=request.source_sha256 or None
        )
        return convert.chunking_to_pb(result, request.project_id)
