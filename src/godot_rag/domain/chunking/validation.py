"""The design's validation rules, run before anything of a file is published."""

from __future__ import annotations

from dataclasses import dataclass

from godot_rag.domain.ids import sha256_hex
from godot_rag.domain.models import ChunkingResult


@dataclass(frozen=True)
class ValidationProblem:
    rule: str
    message: str


def validate_chunking(
    expanded_block: bytes, result: ChunkingResult, payload_chunk_ids: list[tuple[str, int]]
) -> list[ValidationProblem]:
    """expanded block sha256 == trace sha256; chunk_order strictly increasing;
    every payload chunk_id exists in the file's chunk list with the same order."""
    problems: list[ValidationProblem] = []
    actual = sha256_hex(expanded_block)
    if actual != result.source_sha256:
        problems.append(ValidationProblem("sha256", f"file content sha256 {actual} != chunk trace sha256 {result.source_sha256}"))
    previous = 0
    for c in result.chunks:
        if c.chunk_order <= previous:
            problems.append(
                ValidationProblem("order", f"chunk_order {c.chunk_order} of {c.chunk_id} does not increase (after {previous})")
            )
        previous = c.chunk_order
    orders = {c.chunk_id: c.chunk_order for c in result.chunks}
    if len(orders) != len(result.chunks):
        problems.append(ValidationProblem("unique", "duplicate chunk_id in the file's chunk list"))
    for chunk_id, order in payload_chunk_ids:
        if chunk_id not in orders:
            problems.append(ValidationProblem("membership", f"payload chunk {chunk_id} is not in the file's chunk list"))
        elif orders[chunk_id] != order:
            problems.append(
                ValidationProblem(
                    "membership", f"payload chunk {chunk_id} has order {order}, the file's list says {orders[chunk_id]}"
                )
            )
    return problems
