"""GDScript that Godot reads and tree-sitter-gdscript does not, made parseable without moving a byte.

Two shapes common in real projects break the grammar (6.1) while Godot parses them:

- A comment line indented less than the block it sits in, most often code commented out with the editor's
  toggle, which puts ``#`` at column 0 before the line's own indentation (``#\\t\\t$shape.disabled = true``).
  Godot's tokenizer skips comment lines when it reads indentation; the grammar's scanner takes the comment's
  column for the block's, closes the block and fails at the next ``else:``, or at the first statement of a
  block that begins with such a line.
- ``var`` before a parameter (``func f(var x: int)``), accepted by Godot 3's parser (Godot 4 rejects it).
- The RPC keywords ``sync`` and ``slave`` (Godot 3's older names of ``remotesync`` and ``puppet``), which the
  grammar lacks while it knows the others.

``tolerant_source`` rewrites only those spots and keeps every byte offset and line: a comment line is given
the indentation of the code line after it (its ``#`` moved, padding or the comment's first characters
traded for the width), and a parameter's ``var`` and a ``sync``/``slave`` keyword become spaces (the patch reads
the keyword from the source before the member). Tree-sitter node offsets therefore hold for
the original bytes, which is what every caller slices. ``parse_tolerant`` parses the original first and the
rewritten text only when the original has errors, so a clean file is parsed once, as it is.
"""

from __future__ import annotations

import re

from tree_sitter import Parser, Tree

_COMMENT_LINE = re.compile(rb"^([ \t]*)#")
_FUNC_HEAD = re.compile(rb"\bfunc\b[ \t]*[A-Za-z_][A-Za-z_0-9]*[ \t]*\(")
_PARAM_VAR = re.compile(rb"var(?=[ \t])")
_OLD_RPC_KEYWORD = re.compile(rb"^([ \t]*)(sync|slave)(?=[ \t]+(?:func|var|onready|static)\b)", re.M)


def parse_tolerant(parser: Parser, src: bytes) -> tuple[Tree, bytes]:
    """The tree of ``src`` and ``src``; where it has errors, the tree of ``tolerant_source(src)`` and that text
    (same byte offsets: a sub-range parse of the file must read the same text)."""
    tree = parser.parse(src)
    if not tree.root_node.has_error:
        return tree, src
    fixed = tolerant_source(src)
    return (tree, src) if fixed == src else (parser.parse(fixed), fixed)


def tolerant_source(src: bytes) -> bytes:
    """``src`` with the two shapes of the module docstring rewritten in place (same length, same lines)."""
    lines = src.split(b"\n")
    _reindent_comment_lines(lines)
    out = b"\n".join(lines)
    out = _OLD_RPC_KEYWORD.sub(lambda m: m.group(1) + b" " * len(m.group(2)), out)
    return _blank_parameter_var(out)


def _indent_of(line: bytes) -> bytes:
    return line[: len(line) - len(line.lstrip(b" \t"))]


def _reindent_comment_lines(lines: list[bytes]) -> None:
    target: bytes | None = None  # indentation of the next code line below (None: none below)
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].rstrip(b"\r")
        if not line.strip():
            continue
        m = _COMMENT_LINE.match(line)
        if m is None:
            target = _indent_of(line)
            continue
        if target is None or m.group(1) == target:
            continue
        lines[i] = _moved_comment(lines[i], len(m.group(1)), target)


def _moved_comment(line: bytes, hash_at: int, target: bytes) -> bytes:
    """``line`` (a comment whose ``#`` is at ``hash_at``) with its ``#`` after ``target``, the same length."""
    body = line[hash_at + 1 :]
    width = len(target) - hash_at
    if width <= 0:
        return target + b"#" + b" " * -width + body
    dropped, kept = body[:width], body[width:]
    if len(dropped) < width or any(c in b"\"'\\\r" for c in dropped):
        return line  # too short, or its text could end a string the line is really in: left as it is
    # A dropped lead byte would leave its continuation bytes behind: spaces keep the length.
    lead = len(kept) - len(kept.lstrip(bytes(range(0x80, 0xC0))))
    return target + b"#" + b" " * lead + kept[lead:]


def _blank_parameter_var(src: bytes) -> bytes:
    out = bytearray(src)
    for head in _FUNC_HEAD.finditer(src):
        i, depth, expect_param = head.end(), 1, True
        while i < len(src) and depth > 0:
            c = src[i]
            if c in b" \t\r\n\\":
                i += 1
                continue
            if c in b"\"'":
                end = src.find(src[i : i + 1], i + 1)
                i = len(src) if end < 0 else end + 1
                expect_param = False
                continue
            if c in b"([{":
                depth += 1
            elif c in b")]}":
                depth -= 1
            elif c == ord(",") and depth == 1:
                expect_param = True
                i += 1
                continue
            elif expect_param and depth == 1 and _PARAM_VAR.match(src, i):
                out[i : i + 3] = b"   "
                i += 3
            expect_param = False
            i += 1
    return bytes(out)
