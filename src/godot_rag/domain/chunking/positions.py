"""Byte positions shared by the parser and the direct chunker."""

from __future__ import annotations


def byte_position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and byte column of a byte offset (for bytes that cannot be decoded)."""
    line = data.count(b"\n", 0, offset) + 1
    line_start = data.rfind(b"\n", 0, offset) + 1
    return line, offset - line_start + 1
