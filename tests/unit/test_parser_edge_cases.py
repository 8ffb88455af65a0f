"""Inputs found in the wild that once broke the parser's self-checks."""

from __future__ import annotations

import pytest

from godot_rag.domain.chunking.gdscript import parse_gdscript


@pytest.mark.parametrize(
    "data",
    [
        b"extends Node\n\xc2\xa0\nvar x = 1\n",  # a line holding only a no-break space
        b"\xc2\xa0\n",
        b"extends Node\n\xe3\x80\x80\n\nfunc f():\n\tpass\n\xc2\xa0",  # ideographic space, no final newline
    ],
)
def test_unicode_space_only_lines_stay_covered(data: bytes):
    result = parse_gdscript("a.gd", data)
    assert result.status in ("ok", "partial")
    covered = set()
    for c in result.chunks:
        assert data[c.span.start_byte : c.span.end_byte].decode() == c.code_text
        covered.update(range(c.span.start_line, c.span.end_line + 1))
    non_blank = {i + 1 for i, line in enumerate(data.split(b"\n")) if line.strip()}
    assert non_blank <= covered
