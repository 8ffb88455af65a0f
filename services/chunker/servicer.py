from __future__ import annotations

import grpc

from godot_rag import convert
from godot_rag.domain.chunking.direct import chunk_direct
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc
from services.chunker.consumer import direct_kind


class ChunkerServicer(sgrpc.ChunkerServicer):
    """Chunker.Chunk as a standalone call: one non-GDScript text file in, its direct chunks out."""

    async def Chunk(self, request: spb.ChunkRequest, context: grpc.aio.ServicerContext):
        if not request.source_file or not request.source_kind:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "source_file and source_kind are required")
        if request.source_kind == "gdscript":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "gdscript goes to Parser.Parse")
        result = chunk_direct(request.source_file, direct_kind(request.source_kind), request.source_text,
                              expected_sha256=request.source_sha256 or None)
        return convert.chunking_to_pb(result, request.project_id)
