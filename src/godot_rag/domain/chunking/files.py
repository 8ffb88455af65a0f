"""chunk_file(): one file in, its chunks out, whichever chunker its kind needs.

``.gd`` files (source kind ``gdscript``) go to the GDScript AST chunker; every
other included text file to the direct chunker, which cuts kinds it has no
dedicated rules for as plain text blocks. The parser and chunker services,
their gRPC calls, the evaluation and the benchmarks all call this one
function.
"""

from __future__ import annotations

from dataclasses import replace

from godot_rag.domain.chunking.direct import CHUNKER_VERSION, chunk_direct
from godot_rag.domain.chunking.direct import SOURCE_KINDS as DIRECT_KINDS
from godot_rag.domain.chunking.gdscript import PARSER_VERSION, parse_gdscript
from godot_rag.domain.chunking.gdscript import SOURCE_KIND as GDSCRIPT
from godot_rag.domain.models import ChunkingResult, SourceKind


def direct_kind(source_kind: str) -> str:
    """The direct chunker's mode for a kind: its own rules where it has them, plain text blocks otherwise."""
    return source_kind if source_kind in DIRECT_KINDS else SourceKind.TEXT


def producer_version(source_kind: str) -> str:
    """The version of the chunker that cuts files of this kind (part of the chunking reuse key)."""
    return PARSER_VERSION if source_kind == GDSCRIPT else CHUNKER_VERSION


def chunk_file(source_file: str, source_kind: str, data: bytes, *, expected_sha256: str | None = None) -> ChunkingResult:
    """Cut one file; the result keeps the caller's source kind."""
    if source_kind == GDSCRIPT:
        return parse_gdscript(source_file, data, expected_sha256=expected_sha256 or None)
    result = chunk_direct(source_file, direct_kind(source_kind), data, expected_sha256=expected_sha256 or None)
    return result if result.source_kind == source_kind else replace(result, source_kind=source_kind)
