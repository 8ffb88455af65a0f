from __future__ import annotations

import grpc

from godot_rag import convert
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


class ParserServicer(sgrpc.ParserServicer):
    """Parser.Parse as a standalone call: one .gd file in, its AST chunks out."""

    async def Parse(self, request: spb.ParseRequest, context: grpc.aio.ServicerContext):
        if request.source_kind and request.source_kind != "gdscript":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the parser takes gdscript, not {request.source_kind!r}")
        if not request.source_file:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "source_file is required")
        result = parse_gdscript(request.source_file, request.source_text, expected_sha256=request.source_sha256 or None)
        return convert.chunking_to_pb(result, request.project_id)
