from __future__ import annotations

import asyncio

import grpc

from godot_rag import convert
from godot_rag.domain.chunking.files import chunk_file
from godot_rag.domain.chunking.gdscript import SOURCE_KIND as GDSCRIPT
from godot_rag.domain.ingest.policy import check_source_file
from godot_rag.errors import InvalidInputError
from godot_rag.infra.grpc_edge import grpc_errors
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


class ChunkerServicer(sgrpc.ChunkerServicer):
    """Chunker.Chunk as a standalone call: one non-GDScript text file in, its direct chunks out."""

    @grpc_errors
    async def Chunk(self, request: spb.ChunkRequest, context: grpc.aio.ServicerContext) -> pb.ChunkingOutput:
        if not request.source_file or not request.source_kind:
            raise InvalidInputError("source_file and source_kind are required")
        if request.source_kind == GDSCRIPT:
            raise InvalidInputError("gdscript goes to Parser.Parse")
        check_source_file(request.source_file)
        result = await asyncio.to_thread(
            chunk_file, request.source_file, request.source_kind, request.source_text, expected_sha256=request.source_sha256 or None
        )
        return convert.chunking_to_pb(result, request.project_id)
