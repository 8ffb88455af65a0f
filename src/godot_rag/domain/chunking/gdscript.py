"""GDScript AST parser: cuts a ``.gd`` file into traceable chunks.

``parse_gdscript(source_file, source_bytes)`` parses the file with
tree-sitter-gdscript (which accepts Godot 3 and Godot 4 syntax; a clean parse
says nothing about the version; where the grammar fails on shapes Godot reads, comment lines indented less than
their block, ``var`` before a parameter and the RPC keywords ``sync``/``slave``, the file is parsed as
``chunking.tolerant`` rewrites it, same offsets) and returns a ``ChunkingResult`` whose chunks
cover every non-blank line exactly once, in file order.  It never raises on
bad input; it reports a status instead:

* ``failed``: over ``max_bytes``, sha256 differs from ``expected_sha256``,
  NUL bytes (binary content) or invalid UTF-8 (the message names the byte
  offset).  No chunks.
* ``empty``: no non-blank line.  No chunks.
* ``partial``: tree-sitter found ERROR/MISSING nodes; they are listed as
  ``SourceError`` (1-based line, 1-based character column) and the file is
  still chunked (see "Syntax errors").
* ``ok`` otherwise.

Chunk kinds
-----------
``tool`` (Godot 3 bare ``tool`` and Godot 4 ``@tool``), ``class_name``,
``class_extends``, ``signal``, ``enum``, ``const``, ``variable`` (``var``,
``export``/``@export*``, ``onready``/``@onready``, both setget forms),
``function`` (``func``, ``static func``, ``func _init``), ``inner_class``
(the ``class X extends Y:`` header only; its members are chunked like the
top level and qualified by the class path) and ``statement`` (anything else
at class level, so nothing is dropped).  ``class_name X extends Y`` on one
line is a single ``class_name`` chunk.

Grouping
--------
Consecutive declarations of the same kind in the same class, with no blank
line between them, form one chunk (``@export var speed`` + ``var
screen_size``).  This applies to signal, enum, const, variable and statement;
functions, inner class headers, tool, class_name and class_extends are always
chunks of their own.  Declarations of different kinds are separate chunks
even when adjacent.  Two declarations on the same line always share a chunk
(a line belongs to exactly one chunk); the first one's kind wins.

Comments and standalone annotations
-----------------------------------
A standalone annotation line (``@rpc``, ``@warning_ignore(...)``,
``@export`` above its ``var``) belongs to the declaration after it.  A
comment block (consecutive comment lines; ``#region``/``#endregion`` count as
comments) belongs to the declaration after it, except when it touches the
declaration before it and is followed by a blank line: then it is a trailing
note of that declaration.  ``#endregion`` closes what is above it and always
joins the declaration before it.  Comments at the end of the file belong to
the last chunk; a file of comments only is one ``statement`` chunk.  Comments
inside a function belong to the function.

Spans, ids, order
-----------------
A span runs from the first non-blank line to the last non-blank line of the
chunk; ``start_byte`` is the start of the first line (after a UTF-8 BOM on
line 1), ``end_byte`` the end of the last line without its line terminator
(``\\n`` or ``\\r\\n``; interior ``\\r`` stay in ``code_text``).
``code_text == source_bytes[start_byte:end_byte].decode()``.

``chunk_id = "<source_file>:<chunk_kind>:<name>"``.  Names: the function,
class, signal, enum or class_name name; a group is named after its first
declaration; an anonymous enum after its first enumerator; ``tool``,
``class_extends`` and ``statement`` chunks by their 1-based ordinal within
their class and kind (``player.gd:class_extends:1``).  Members of inner
classes are qualified by the class path (``player.gd:function:Inner.helper``,
``Outer.Inner.f``).  A repeated id gets ``#2``, ``#3``... in file order.

Candidates (all extracted from code only: the code mask)
--------------------------------------------------------
``code_mask`` is ``code_text`` with comments and string/StringName/NodePath
literal bodies (and quoted ``$"..."`` bodies) replaced by spaces, one space
per character, line breaks kept: same length as ``code_text``.

``symbol_candidates`` (order of first appearance):
  * identifiers that name a type: PascalCase (``Vector2``, ``Area2D``,
    ``KinematicBody2D``; also in type hints, ``is``/``as``, constructors,
    ``extends``) and the all-caps types AABB/JSON/RID/UPNP.  Engine
    singletons (``Input``, ``OS``, ``Engine``...) are not types and are not
    symbols; all-caps constants (``PI``, ``KEY_A``) are not symbols;
  * typed collections as written, whitespace normalised: ``Array[int]``;
  * annotations ``@export``, ``@onready``, ``@rpc``...;
  * the Godot 3 keywords that mark syntax: ``tool``, ``export``, ``onready``,
    ``setget``, ``remote``/``master``/``puppet``/``*sync``; and ``await``;
  * the names declared by a declaration chunk (var/const/signal/enum,
    class_name, inner class); a function's own name is its chunk name, not a
    symbol; local variables are not symbols;
  * the node class named by the last segment of a node path, when it is a
    Godot 3/4 node class: ``$AnimatedSprite2D`` gives ``AnimatedSprite2D``,
    ``$Trail`` gives nothing.

``api_call_candidates`` (ranked by category, then first appearance):
  1. ``Class.method`` calls on a PascalCase receiver or singleton
     (``Input.is_action_pressed``, ``OS.get_name``);
  2. ``Class.MEMBER`` accesses (``Vector2.ZERO``, ``Engine.editor_hint``);
  3. method calls on a variable, ``var.method`` (``velocity.normalized``,
     ``hit.emit``, ``super.foo``), or on the result of a plain call, written
     ``f().method`` (``get_tree().change_scene``; not for ``preload``/
     ``load``/``get_node`` results, which are user content), except a small
     stop list of generic container/math methods (``length``, ``size``,
     ``abs``, ``append``...; see ``gdscript_candidates.STOP_METHODS``).
     Field accesses on variables (``velocity.x``) are not candidates;
  4. calls of known migration-relevant engine methods and global functions
     (``yield``, ``connect``, ``emit_signal``, ``set_deferred``,
     ``move_and_slide``, ``instance``, ``rand_range``...; see
     ``KNOWN_CALLS``) written bare, on ``self``, on a node path
     (``$Shape.set_deferred`` gives ``set_deferred``) or deeper in a chain;
     Godot 3 super calls as written (``._ready``).
  Other bare calls (``hide()``, ``show()``) and calls on node paths
  (``$Sprite.play()``) are not candidates.  Receivers declared in the same
  file (enums, inner classes, constants) are user code, not engine API:
  ``State.IDLE`` is not a candidate, ``Bullet.instance()`` gives
  ``instance`` by rule 4.

``reference_candidates`` (order of first appearance): ``res://``,
``user://`` and ``uid://`` paths inside string literals; the first string
argument of ``preload``/``load`` and of ``get_node``/``get_node_or_null``/
``has_node``/``find_node``/``find_child`` (the string content); a string
``extends`` target; node paths as written (``$Node``, ``$"Path/To"``,
``%Unique``) and NodePath literals as written (``^"A/B"``).

``surrounding_context``: the top-level header lines (tool, class_name,
extends), the headers of the enclosing inner classes, and the declaration
lines of the class members (var/const/signal/enum, inner class headers) whose
names the chunk's code mentions, in file order, one declaration per line
range, joined by ``\\n``.  Empty for tool/class_name/class_extends chunks.

Syntax errors
-------------
Lines inside an ERROR node nested in a function stay in that function.  A
class-level ERROR region, or a broken declaration that swallowed later lines
at its own indentation (``func f():`` with a bad body eating ``func g():``),
is cut at the lines that start code at the region's indentation; each piece
is re-parsed on its own (tree-sitter included ranges, so byte offsets stay
those of the file) and chunked normally when it parses cleanly, otherwise it
becomes one chunk whose kind is guessed from its first keyword (``func`` ->
function...), or ``statement``, with node_kind ``ERROR``.  The errors
reported for such a region are those of its pieces that still fail on their
own (precise positions); otherwise the region's own ERROR/MISSING nodes.

Invariants (checked on every call; a violation raises AssertionError because
it is a parser bug, not bad input): code_text equals the span's bytes;
every non-blank line is in exactly one chunk; chunk_order strictly
increasing; chunk ids unique; code_mask as long as code_text.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate, count
from operator import add, methodcaller, sub

import tree_sitter_gdscript
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Range

from godot_rag.domain.chunking import candidates as cand
from godot_rag.domain.chunking.positions import byte_position as _position
from godot_rag.domain.chunking.tolerant import parse_tolerant
from godot_rag.domain.models import (
    PARSE_EMPTY,
    PARSE_FAILED,
    PARSE_OK,
    PARSE_PARTIAL,
    Chunk,
    ChunkingResult,
    SourceError,
    SourceKind,
    Span,
)

PARSER_VERSION = "gdscript-ast/2"
SOURCE_KIND = SourceKind.GDSCRIPT

KIND_TOOL = "tool"
KIND_CLASS_NAME = "class_name"
KIND_CLASS_EXTENDS = "class_extends"
KIND_SIGNAL = "signal"
KIND_ENUM = "enum"
KIND_CONST = "const"
KIND_VARIABLE = "variable"
KIND_FUNCTION = "function"
KIND_INNER_CLASS = "inner_class"
KIND_STATEMENT = "statement"

_GROUPABLE = frozenset({KIND_SIGNAL, KIND_ENUM, KIND_CONST, KIND_VARIABLE, KIND_STATEMENT})
_HEADER_KINDS = frozenset({KIND_TOOL, KIND_CLASS_NAME, KIND_CLASS_EXTENDS})
_ORDINAL_KINDS = frozenset({KIND_TOOL, KIND_CLASS_EXTENDS, KIND_STATEMENT})
_VARIABLE_NODES = frozenset({"variable_statement", "export_variable_statement", "onready_variable_statement"})
_COMMENT_NODES = frozenset({"comment", "region_start", "region_end"})
_SIMPLE_KINDS = {
    "signal_statement": KIND_SIGNAL,
    "const_statement": KIND_CONST,
}
_KEYWORD_MARKERS = {"export_variable_statement": "export", "onready_variable_statement": "onready"}

# Attachment classes of a piece.
_DECL = 0
_COMMENT = 1
_ANNOTATION = 2  # binds to the declaration after it
_CLOSER = 3  # `#endregion`: binds to the declaration before it

_BOM = b"\xef\xbb\xbf"

_QUERY_SOURCE = """
(comment) @mask
(region_start) @mask
(region_end) @mask
(string) @string
(string_name) @literal
(node_path) @node_path
(get_node) @get_node
(base_call) @base_call
(await_expression) @await
"""

_SEGMENT_HEAD = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s*)*(?:static\s+)?"
    r"(?:(?:remote|master|puppet|remotesync|mastersync|puppetsync|sync)\s+)?"
    r"(func|var|const|signal|enum|class_name|class|extends|export|onready|tool)\b"
    r"(?:\s*\([^)]*\))?\s*(?:var\s+)?([A-Za-z_]\w*)?"
)
_SEGMENT_KINDS = {
    "func": KIND_FUNCTION,
    "var": KIND_VARIABLE,
    "export": KIND_VARIABLE,
    "onready": KIND_VARIABLE,
    "const": KIND_CONST,
    "signal": KIND_SIGNAL,
    "enum": KIND_ENUM,
    "class": KIND_INNER_CLASS,
    "class_name": KIND_CLASS_NAME,
    "extends": KIND_CLASS_EXTENDS,
    "tool": KIND_TOOL,
}
_NOT_NEWLINE = re.compile(r"[^\n\r]")
_ENDS_WITH_CR = methodcaller("endswith", b"\r")
# The text every remote keyword (remote, master, puppet, *sync) or `setget`
# keyword contains.
_VARIABLE_KEYWORDS = re.compile(rb"remote|master|puppet|setget")


@lru_cache(maxsize=1)
def _language() -> Language:
    # Built on first use, not at import: importing the domain package must
    # stay cheap.
    return Language(tree_sitter_gdscript.language())


@lru_cache(maxsize=1)
def _query() -> Query:
    return Query(_language(), _QUERY_SOURCE)


@dataclass(slots=True)
class _Piece:
    """A syntax node (or a run of lines) at class level, before grouping."""

    kind: str
    attach: int
    start_line: int  # 0-based, inclusive
    end_line: int
    scope: tuple[str, ...]
    node_types: list[str] = field(default_factory=list)
    name: str | None = None
    # (byte offset, value) facts read from the tree.
    symbols: list[tuple[int, str]] = field(default_factory=list)
    refs: list[tuple[int, str]] = field(default_factory=list)


@dataclass(slots=True)
class _Group:
    """One future chunk: grouped pieces plus the lines attached to them."""

    kind: str
    scope: tuple[str, ...]
    name: str | None
    start_line: int
    end_line: int
    node_types: list[str]
    symbols: list[tuple[int, str]]
    refs: list[tuple[int, str]]


# A query capture: (start byte, end byte, capture name).
_Capture = tuple[int, int, str]
# What one chunk gets from the tree: its first and end character offsets in the
# body text, then symbols, references and base calls as (offset from the
# chunk start in characters, value), and the offsets of the base calls' dots.
_Facts = list[tuple[int, str]]
_ChunkFacts = tuple[int, int, _Facts, _Facts, _Facts, set[int]]
_WHITESPACE_BYTES = frozenset(b" \t\r\n\f\v")


def _failed(source_file: str, sha: str, message: str, line: int = 1, column: int = 1) -> ChunkingResult:
    return ChunkingResult(
        source_file=source_file,
        source_kind=SOURCE_KIND,
        source_sha256=sha,
        status=PARSE_FAILED,
        chunks=(),
        errors=(SourceError(line, column, line, column, message),),
        producer_version=PARSER_VERSION,
    )


def parse_gdscript(
    source_file: str,
    source_bytes: bytes,
    *,
    expected_sha256: str | None = None,
    max_bytes: int = 10 * 1024 * 1024,
) -> ChunkingResult:
    """Parse one ``.gd`` file into chunks; see the module docstring."""
    sha = hashlib.sha256(source_bytes).hexdigest()
    size = len(source_bytes)
    if size > max_bytes:
        return _failed(source_file, sha, f"file is {size} bytes, over the limit of {max_bytes}")
    if expected_sha256 is not None and expected_sha256.lower() != sha:
        return _failed(source_file, sha, f"sha256 mismatch: expected {expected_sha256}, got {sha}")
    nul = source_bytes.find(b"\x00")
    if nul >= 0:
        line, column = _position(source_bytes, nul)
        return _failed(source_file, sha, f"binary content: NUL byte at offset {nul}", line, column)
    try:
        decoded = source_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(source_bytes, exc.start)
        return _failed(source_file, sha, f"invalid UTF-8 at byte offset {exc.start}: {exc.reason}", line, column)
    body_start = len(_BOM) if source_bytes.startswith(_BOM) else 0
    if not source_bytes[body_start:].strip():
        return ChunkingResult(
            source_file=source_file,
            source_kind=SOURCE_KIND,
            source_sha256=sha,
            status=PARSE_EMPTY,
            chunks=(),
            producer_version=PARSER_VERSION,
        )
    # The decoded text (without the BOM) is reused for every chunk's text.
    body_text = decoded[1:] if body_start else decoded
    chunks, errors = _Chunker(source_file, source_bytes, body_start, body_text).run()
    return ChunkingResult(
        source_file=source_file,
        source_kind=SOURCE_KIND,
        source_sha256=sha,
        status=PARSE_PARTIAL if errors else PARSE_OK,
        chunks=chunks,
        errors=errors,
        producer_version=PARSER_VERSION,
    )


class _Chunker:
    """State of one parse: line table, pieces, groups, captures."""

    def __init__(self, source_file: str, src: bytes, body_start: int, body_text: str) -> None:
        self.source_file = source_file
        self.src = src
        self.parsed_src = src  # what tree-sitter reads: src, or tolerant_source(src) (same offsets)
        self.body_start = body_start
        self.body_text = body_text
        # One character per byte: offsets need no conversion.
        self.body_ascii = len(body_text) == len(src) - body_start
        # starts[i] is the byte offset of line i; one extra entry past the end
        # so that starts[i + 1] - 1 is always line i's newline (or EOF).
        lines = src.split(b"\n")
        lengths = list(map(len, lines))
        # map/accumulate keep the per-line work in C: this runs for every file.
        self.starts: list[int] = list(map(add, accumulate(lengths, initial=0), count()))
        # ends[i]: the end of line i without its terminator (a "\r" before
        # the "\n" is part of the terminator).
        self.ends: list[int] = list(map(add, self.starts, lengths))
        if b"\r" in src:
            self.ends = list(map(sub, self.ends, map(_ENDS_WITH_CR, lines)))
        if self.ends[0] < body_start:
            self.ends[0] = body_start
        self.line_count = len(self.starts) - 1
        self.pieces: list[_Piece] = []
        # Context material: member declarations per class scope, class header
        # line ranges, top-level header line ranges.
        self.members: dict[tuple[str, ...], dict[str, tuple[int, int]]] = {}
        self.class_headers: dict[tuple[str, ...], tuple[int, int]] = {}
        self.header_lines: list[tuple[int, int]] = []
        self.local_types: set[str] = set()
        # Errors found by re-parsing the pieces of a cut region, keyed by the
        # region node's byte range: more precise than the region itself.
        self.region_errors: dict[tuple[int, int], list[SourceError]] = {}
        # Per-file caches for surrounding_context, filled on first use: the
        # members visible from a class scope, the header line ranges of a
        # scope, the text of a line range and of a whole context.
        self.visible: dict[tuple[str, ...], list[tuple[str, tuple[int, int]]]] = {}
        self.scope_headers: dict[tuple[str, ...], set[tuple[int, int]]] = {}
        self.range_texts: dict[tuple[int, int], str] = {}
        self.contexts: dict[tuple[tuple[int, int], ...], str] = {}

    # ----------------------------------------------------------------- lines
    def line_of(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def line_start(self, line: int) -> int:
        # Line 0 starts after the BOM; later lines start after a newline.
        return self.starts[line] if line else self.body_start

    def line_end(self, line: int) -> int:
        return self.ends[line]

    def is_blank(self, line: int) -> bool:
        return not self.src[self.starts[line] if line else self.body_start : self.ends[line]].strip()

    def node_lines(self, node: Node) -> tuple[int, int]:
        first_byte, end_byte = node.start_byte, node.end_byte
        last_byte = end_byte - 1 if end_byte > first_byte else first_byte
        starts = self.starts
        start = bisect_right(starts, first_byte) - 1
        end = bisect_right(starts, last_byte, start) - 1
        src = self.src
        # Most nodes begin and end with a token; ERROR nodes may begin or end
        # with whitespace-only lines.
        if first_byte < len(src) and src[first_byte] in _WHITESPACE_BYTES:
            while start < end and self.is_blank(start):
                start += 1
        if last_byte < len(src) and src[last_byte] in _WHITESPACE_BYTES:
            while end > start and self.is_blank(end):
                end -= 1
        return start, end

    def text(self, start: int, end: int) -> str:
        # Error recovery can cut a node inside a multi-byte character;
        # line-aligned ranges (code_text) are always whole.
        return self.src[start:end].decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ run
    def run(self) -> tuple[tuple[Chunk, ...], tuple[SourceError, ...]]:
        parser = Parser(_language())
        tree, self.parsed_src = parse_tolerant(parser, self.src)
        root = tree.root_node
        if root.type == "ERROR":
            self._error_region(root, ())
        else:
            self._build(root.children, ())
        errors = self._errors(root) if root.has_error else ()
        self._normalise_pieces()
        groups = self._group(self._attach())
        captures = self._captures(root)
        chunks = self._chunks(groups, captures)
        self._check(chunks)
        return chunks, errors

    # ---------------------------------------------------------------- errors
    def _errors(self, root: Node) -> tuple[SourceError, ...]:
        found: list[SourceError] = []
        stack = [root]
        while stack:
            node = stack.pop()
            refined = self.region_errors.get((node.start_byte, node.end_byte))
            if refined:
                found.extend(refined)
            elif node.is_error or node.is_missing:
                found.extend(self._collect_errors(node))
            else:
                stack.extend(child for child in node.children if child.has_error or child.is_missing)
        unique = set(found)
        return tuple(sorted(unique, key=lambda e: (e.line, e.column, e.end_line, e.end_column, e.message)))

    def _column(self, line: int, offset: int) -> int:
        return len(self.src[self.starts[line] : offset].decode("utf-8", errors="replace")) + 1

    def _collect_errors(self, root: Node) -> list[SourceError]:
        found: list[SourceError] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_error:
                # 40 bytes may end inside a character: drop the partial one.
                snippet = self.src[node.start_byte : min(node.end_byte, node.start_byte + 40)].decode("utf-8", errors="ignore")
                snippet = snippet.split("\n", 1)[0].strip()
                found.append(self._error_at(node, f"syntax error near {snippet!r}"))
            elif node.is_missing:
                found.append(self._error_at(node, f"syntax error: missing {node.type!r}"))
            else:
                stack.extend(child for child in node.children if child.has_error or child.is_missing)
        return found

    def _error_at(self, node: Node, message: str) -> SourceError:
        start_line = self.line_of(node.start_byte)
        end_line = self.line_of(node.end_byte)
        return SourceError(
            line=start_line + 1,
            column=self._column(start_line, node.start_byte),
            end_line=end_line + 1,
            end_column=self._column(end_line, node.end_byte),
            message=message,
        )

    # ---------------------------------------------------------------- pieces
    def _piece(self, node: Node, kind: str, scope: tuple[str, ...], attach: int = _DECL) -> _Piece:
        start, end = self.node_lines(node)
        return _Piece(kind, attach, start, end, scope, [node.type])

    def _member(self, scope: tuple[str, ...], name: str, lines: tuple[int, int]) -> None:
        self.members.setdefault(scope, {}).setdefault(name, lines)

    def _build(self, nodes: list[Node], scope: tuple[str, ...]) -> None:
        for node in nodes:
            if node.start_byte == node.end_byte:
                continue  # MISSING tokens have no text and no line of their own
            node_type = node.type
            if node.has_error and node_type != "ERROR" and len(self._segment_starts(node)[2]) > 1:
                # A broken declaration swallowed later class-level lines
                # (`func f():` with a bad body eating `func g():`): cut it.
                self._error_region(node, scope)
            elif node_type in _COMMENT_NODES:
                attach = _CLOSER if node_type == "region_end" else _COMMENT
                self.pieces.append(self._piece(node, "", scope, attach))
            elif node_type == "annotation":
                if not scope and _child_text(node, "identifier") == "tool":
                    piece = self._piece(node, KIND_TOOL, scope)
                    self.header_lines.append((piece.start_line, piece.end_line))
                    self.pieces.append(piece)
                else:
                    self.pieces.append(self._piece(node, "", scope, _ANNOTATION))
            elif node_type == "ERROR":
                self._error_region(node, scope)
            elif node_type in _VARIABLE_NODES:
                self.pieces.append(self._variable(node, scope))
            elif node_type == "function_definition" or node_type == "constructor_definition":
                self.pieces.append(self._function(node, scope))
            elif node_type == "class_definition":
                self._class(node, scope)
            elif node_type in _SIMPLE_KINDS:
                piece = self._piece(node, _SIMPLE_KINDS[node_type], scope)
                self._declare(piece, node, scope)
                self.pieces.append(piece)
            elif node_type == "enum_definition":
                self.pieces.append(self._enum(node, scope))
            elif node_type == "extends_statement":
                piece = self._piece(node, KIND_CLASS_EXTENDS, scope)
                self._extends_target(piece, node)
                if not scope:
                    self.header_lines.append((piece.start_line, piece.end_line))
                self.pieces.append(piece)
            elif node_type == "class_name_statement":
                piece = self._piece(node, KIND_CLASS_NAME, scope)
                self._declare(piece, node, scope, member=False)
                extends = node.child_by_field_name("extends")
                if extends is not None:
                    self._extends_target(piece, extends)
                if not scope:
                    self.header_lines.append((piece.start_line, piece.end_line))
                self.pieces.append(piece)
            elif node_type == "expression_statement" and not scope and _is_bare_tool(node):
                piece = self._piece(node, KIND_TOOL, scope)
                piece.symbols.append((node.start_byte, "tool"))
                self.header_lines.append((piece.start_line, piece.end_line))
                self.pieces.append(piece)
            else:
                self.pieces.append(self._piece(node, KIND_STATEMENT, scope))

    def _declare(self, piece: _Piece, node: Node, scope: tuple[str, ...], member: bool = True) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        name = self.text(name_node.start_byte, name_node.end_byte)
        if piece.name is None:
            piece.name = name
        piece.symbols.append((name_node.start_byte, name))
        if member:
            self._member(scope, name, (piece.start_line, piece.end_line))
        if node.type == "const_statement":
            self.local_types.add(name)

    def _variable(self, node: Node, scope: tuple[str, ...]) -> _Piece:
        piece = self._piece(node, KIND_VARIABLE, scope)
        marker = _KEYWORD_MARKERS.get(node.type)
        if marker is not None:
            piece.symbols.append((node.start_byte, marker))
        # Most variables have neither keyword: skip building their children.
        has_keyword = _VARIABLE_KEYWORDS.search(self.src, node.start_byte, node.end_byte) is not None
        children = node.children if has_keyword else ()
        for child in children:
            if child.type == "remote_keyword":
                piece.symbols.append((child.start_byte, self.text(child.start_byte, child.end_byte)))
            elif child.type == "setget":
                first = child.child(0)
                if first is not None and first.type == "setget":
                    piece.symbols.append((first.start_byte, "setget"))
        self._declare(piece, node, scope)
        return piece

    def _function(self, node: Node, scope: tuple[str, ...]) -> _Piece:
        piece = self._piece(node, KIND_FUNCTION, scope)
        name_node = node.child_by_field_name("name")
        if name_node is not None:
            piece.name = self.text(name_node.start_byte, name_node.end_byte)
        elif node.type == "constructor_definition":
            piece.name = "_init"
        first = node.child(0)
        if first is not None and first.type == "remote_keyword":
            piece.symbols.append((first.start_byte, self.text(first.start_byte, first.end_byte)))
        if piece.name is None:
            piece.kind = KIND_STATEMENT
        return piece

    def _enum(self, node: Node, scope: tuple[str, ...]) -> _Piece:
        piece = self._piece(node, KIND_ENUM, scope)
        self._declare(piece, node, scope)
        self.local_types.update(name for _pos, name in piece.symbols)
        if piece.name is None:
            # Anonymous enum: its enumerators are the declared members.
            body = node.child_by_field_name("body")
            for enumerator in body.named_children if body is not None else ():
                left = enumerator.child_by_field_name("left")
                if left is None:
                    continue
                name = self.text(left.start_byte, left.end_byte)
                if piece.name is None:
                    piece.name = name
                piece.symbols.append((left.start_byte, name))
                self._member(scope, name, (piece.start_line, piece.end_line))
        if piece.name is None:
            piece.kind = KIND_STATEMENT
        return piece

    def _extends_target(self, piece: _Piece, node: Node) -> None:
        # `extends "res://base.gd"` or a relative script path: a reference.
        for child in node.named_children:
            if child.type == "string":
                content = _string_content(self.src, child.start_byte, child.end_byte)
                if content is not None and content[0] < content[1]:
                    piece.refs.append((child.start_byte, self.text(*content)))

    def _class(self, node: Node, scope: tuple[str, ...]) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        start, end = self.node_lines(node)
        piece = _Piece(KIND_INNER_CLASS, _DECL, start, end, scope, [node.type])
        if name_node is None:
            piece.kind = KIND_STATEMENT
            self.pieces.append(piece)
            return
        name = self.text(name_node.start_byte, name_node.end_byte)
        piece.name = name
        piece.symbols.append((name_node.start_byte, name))
        self.local_types.add(name)
        inner_scope = scope + (name,)
        # class_body starts right after the colon; its first member tells
        # where the header ends.
        children = body.children if body is not None else []
        members = [child for child in children if child.end_byte > child.start_byte]
        body_line = self.line_of(members[0].start_byte) if members else start
        recurse = body_line > start
        if recurse:
            piece.end_line = body_line - 1
            while piece.end_line > start and self.is_blank(piece.end_line):
                piece.end_line -= 1
        self.class_headers[inner_scope] = (piece.start_line, piece.end_line)
        self._member(scope, name, (piece.start_line, piece.end_line))
        self.pieces.append(piece)
        if recurse:
            self._build(members, inner_scope)

    # ---------------------------------------------------------- error region
    def _segment_starts(self, node: Node) -> tuple[int, int, list[int]]:
        """Lines of ``node`` that start code at the indentation of its first line."""
        first, last = self.node_lines(node)
        src = self.src
        first_text = src[self.starts[first] : self.line_end(first)]
        base = first_text[: len(first_text) - len(first_text.lstrip(b" \t"))]
        seg_starts = [first]
        for line in range(first + 1, last + 1):
            text = src[self.starts[line] : self.line_end(line)]
            rest = text.lstrip(b" \t")
            if not rest.strip() or rest.startswith(b"#"):
                continue
            if len(text) - len(rest) == len(base) and text.startswith(base):
                seg_starts.append(line)
        return first, last, seg_starts

    def _error_region(self, node: Node, scope: tuple[str, ...]) -> None:
        first, last, seg_starts = self._segment_starts(node)
        refined = self.region_errors.setdefault((node.start_byte, node.end_byte), [])
        for index, seg_first in enumerate(seg_starts):
            seg_last = seg_starts[index + 1] - 1 if index + 1 < len(seg_starts) else last
            while seg_last > seg_first and self.is_blank(seg_last):
                seg_last -= 1
            start_byte = max(node.start_byte, self.starts[seg_first])
            end_byte = self.line_end(seg_last)
            if index + 1 == len(seg_starts):
                end_byte = min(end_byte, node.end_byte)
            refined.extend(self._segment(start_byte, max(end_byte, start_byte), seg_first, seg_last, scope))

    def _segment(self, start_byte: int, end_byte: int, first: int, last: int, scope: tuple[str, ...]) -> list[SourceError]:
        """Chunk one piece of a cut region; return the errors it still has."""
        start_point = (first, start_byte - self.starts[first])
        end_line = self.line_of(max(end_byte - 1, start_byte))
        end_point = (end_line, end_byte - self.starts[end_line])
        sub = Parser(_language(), included_ranges=[Range(start_point, end_point, start_byte, end_byte)])
        sub_root = sub.parse(self.parsed_src).root_node
        if not sub_root.has_error and sub_root.type != "ERROR":
            self._build(sub_root.children, scope)
            return []
        # Still broken on its own: one chunk, kind guessed from the keyword.
        head_text = self.text(start_byte, self.line_end(first))
        head = _SEGMENT_HEAD.match(head_text)
        kind = KIND_STATEMENT
        name: str | None = None
        symbols: list[tuple[int, str]] = []
        if head is not None:
            kind = _SEGMENT_KINDS[head.group(1)]
            if kind not in _ORDINAL_KINDS:
                name = head.group(2)
                if name is None:
                    kind = KIND_STATEMENT
                elif kind != KIND_FUNCTION:
                    # A declaration's own name is a symbol even when broken.
                    symbols.append((start_byte + len(head_text[: head.start(2)].encode("utf-8")), name))
        piece = _Piece(kind, _DECL, first, last, scope, ["ERROR"], name, symbols)
        self.pieces.append(piece)
        return self._collect_errors(sub_root)

    # ------------------------------------------------------------- assembly
    def _normalise_pieces(self) -> None:
        """Sort, merge pieces that share a line, cover stray non-blank lines."""
        pieces = sorted(self.pieces, key=lambda p: (p.start_line, p.end_line))
        merged: list[_Piece] = []
        for piece in pieces:
            if merged and piece.start_line <= merged[-1].end_line:
                _absorb(merged[-1], piece)
            else:
                merged.append(piece)
        # Safety net: text the tree did not hand out as a class-level node
        # (never seen on the corpus) still gets a chunk.
        covered: list[_Piece] = []
        previous_end = -1
        sentinel: list[_Piece | None] = [None]
        for maybe_piece in [*merged, *sentinel]:
            next_start = maybe_piece.start_line if maybe_piece is not None else self.line_count
            if next_start - previous_end > 1:
                gap_start = self.line_start(previous_end + 1)
                gap_end = self.line_end(next_start - 1)
                if self.src[gap_start:gap_end].strip():
                    scope = covered[-1].scope if covered else ()
                    for line in range(previous_end + 1, next_start):
                        if self.is_blank(line):
                            continue
                        stray = covered[-1] if covered else None
                        if stray is not None and stray.end_line == line - 1 and stray.node_types == ["text"]:
                            stray.end_line = line
                        else:
                            covered.append(_Piece(KIND_STATEMENT, _DECL, line, line, scope, ["text"]))
            if maybe_piece is not None:
                covered.append(maybe_piece)
                previous_end = maybe_piece.end_line
        self.pieces = covered

    def _attach(self) -> list[_Piece]:
        """Fold comment/annotation pieces into their declaration pieces."""
        decls: list[_Piece] = []
        pending: list[_Piece] = []  # attachables seen since the last declaration

        def flush(next_decl: _Piece | None) -> None:
            if not pending:
                return
            previous = decls[-1] if decls else None
            if previous is None and next_decl is None:
                first, last = pending[0].start_line, pending[-1].end_line
                decls.append(_Piece(KIND_STATEMENT, _DECL, first, last, (), ["comment"]))
                pending.clear()
                return
            blocks: list[list[_Piece]] = [[pending[0]]]
            for piece in pending[1:]:
                if piece.start_line == blocks[-1][-1].end_line + 1:
                    blocks[-1].append(piece)
                else:
                    blocks.append([piece])
            for index, block in enumerate(blocks):
                block_start, block_end = block[0].start_line, block[-1].end_line
                to_previous = next_decl is None or (
                    index == 0 and previous is not None and all(piece.attach == _CLOSER for piece in block)
                )
                if previous is not None and next_decl is not None and index == 0 and not to_previous:
                    touches_previous = block_start == previous.end_line + 1
                    follow = blocks[1][0].start_line if len(blocks) > 1 else next_decl.start_line
                    has_annotation = any(piece.attach == _ANNOTATION for piece in block)
                    to_previous = touches_previous and follow > block_end + 1 and not has_annotation
                if next_decl is None or (to_previous and previous is not None):
                    if previous is not None:
                        previous.end_line = max(previous.end_line, block_end)
                else:
                    next_decl.start_line = min(next_decl.start_line, block_start)
            pending.clear()

        for piece in self.pieces:
            if piece.attach == _DECL:
                flush(piece)
                decls.append(piece)
            else:
                pending.append(piece)
        flush(None)
        return decls

    def _group(self, decls: list[_Piece]) -> list[_Group]:
        groups: list[_Group] = []
        for piece in decls:
            last = groups[-1] if groups else None
            if (
                last is not None
                and piece.kind in _GROUPABLE
                and piece.kind == last.kind
                and piece.scope == last.scope
                and piece.start_line == last.end_line + 1
            ):
                last.end_line = piece.end_line
                for node_type in piece.node_types:
                    if node_type not in last.node_types:
                        last.node_types.append(node_type)
                last.symbols.extend(piece.symbols)
                last.refs.extend(piece.refs)
                continue
            groups.append(
                _Group(
                    piece.kind,
                    piece.scope,
                    piece.name,
                    piece.start_line,
                    piece.end_line,
                    list(piece.node_types),
                    list(piece.symbols),
                    list(piece.refs),
                )
            )
        return groups

    # -------------------------------------------------------------- captures
    def _captures(self, root: Node) -> list[_Capture]:
        found = QueryCursor(_query()).captures(root)
        captures = [(node.start_byte, node.end_byte, kind) for kind, nodes in found.items() for node in nodes]
        captures.sort()
        return captures

    # ------------------------------------------------------------ text layers
    def _char_offsets(self) -> Callable[[int], int]:
        """Byte offset -> character offset into the body text (after the BOM).

        An offset inside a multi-byte character (error recovery can cut a
        node there) counts the complete characters before it only.
        """
        body_start = self.body_start
        if self.body_ascii:
            return lambda byte: byte - body_start
        src, starts = self.src, self.starts
        # Character offset of every line start: "\n" never occurs inside a
        # multi-byte character, so bytes and text split into the same lines.
        char_starts = list(accumulate((len(line) + 1 for line in self.body_text.split("\n")), initial=0))

        def to_char(byte: int) -> int:
            line = bisect_right(starts, byte) - 1
            line_start = max(starts[line], body_start)
            return char_starts[line] + len(src[line_start:byte].decode("utf-8", errors="ignore"))

        return to_char

    def _facts(
        self,
        groups: list[_Group],
        spans: list[tuple[int, int]],
        captures: list[_Capture],
        to_char: Callable[[int], int],
    ) -> tuple[list[_ChunkFacts], list[tuple[int, int]], list[tuple[int, int]]]:
        """Read the tree facts and the captures once for the whole file.

        Returns the facts of each chunk (offsets in characters from the
        chunk's start, as ``cand.extract`` wants them) and the character
        ranges of the body text to blank in the code mask and to fill with
        ``$`` in the scan text.  A capture belongs to the chunk where it
        starts and is clipped to that chunk's end, so a literal cut by an
        error region never blanks text of the next chunk.
        """
        src = self.src
        text = self.text
        facts: list[_ChunkFacts] = []
        mask_ranges: list[tuple[int, int]] = []
        scan_ranges: list[tuple[int, int]] = []
        index = 0
        capture_count = len(captures)
        for group, (start_byte, end_byte) in zip(groups, spans):
            first = to_char(start_byte)
            symbols = [(to_char(byte) - first, value) for byte, value in group.symbols]
            refs = [(to_char(byte) - first, value) for byte, value in group.refs]
            apis: list[tuple[int, str]] = []
            base_dots: set[int] = set()
            # Captures are sorted by start; chunks are in file order.
            while index < capture_count and captures[index][0] < start_byte:
                index += 1
            while index < capture_count and captures[index][0] < end_byte:
                start, end, kind = captures[index]
                index += 1
                if end > end_byte:
                    end = end_byte
                if kind == "mask":
                    mask_ranges.append((to_char(start), to_char(end)))
                elif kind == "string" or kind == "literal" or kind == "node_path":
                    content = _string_content(src, start, end)
                    if content is None:
                        continue
                    if content[0] < content[1]:
                        mask_ranges.append((to_char(content[0]), to_char(content[1])))
                    # Only a literal holding "://" can hold a resource path:
                    # test the bytes before decoding.
                    if kind == "string" and src.find(b"://", *content) >= 0:
                        position = to_char(start) - first
                        refs.extend((position, path) for path in cand.resource_paths(text(*content)))
                    elif kind == "node_path":
                        refs.append((to_char(start) - first, text(start, end)))
                elif kind == "get_node":
                    value = text(start, end)
                    char_start = to_char(start)
                    refs.append((char_start - first, value))
                    scan_ranges.append((char_start, to_char(end)))
                    if value[1:2] in ('"', "'") and end - start > 2:
                        mask_ranges.append((to_char(start + 2), to_char(end - 1)))
                    node_class = cand.node_path_class(value)
                    if node_class is not None:
                        symbols.append((char_start - first, node_class))
                elif kind == "base_call":
                    # `.method(args)`: the Godot 3 way to call the parent's method.
                    member = text(start, end)[1:].split("(", 1)[0].strip()
                    position = to_char(start) - first
                    apis.append((position, "." + member))
                    base_dots.add(position)
                elif kind == "await":
                    symbols.append((to_char(start) - first, "await"))
            facts.append((first, to_char(end_byte), symbols, refs, apis, base_dots))
        return facts, mask_ranges, scan_ranges

    # ---------------------------------------------------------------- chunks
    def _chunks(self, groups: list[_Group], captures: list[_Capture]) -> tuple[Chunk, ...]:
        line_start, ends = self.line_start, self.ends
        spans = [(line_start(group.start_line), ends[group.end_line]) for group in groups]
        facts, mask_ranges, scan_ranges = self._facts(groups, spans, captures, self._char_offsets())
        # One code mask and one scan text for the whole file, sliced per
        # chunk: chunks start at line starts and every range is clipped to
        # its chunk, so a slice equals what the chunk alone would give.
        body = self.body_text
        mask = _blank(body, mask_ranges)
        # Node paths are filled with "$", not spaces: `speed\n$Sprite.play()`
        # must not read as `speed.play()` once the path is gone.
        scan_text = _blank(mask, scan_ranges, "$")

        chunks: list[Chunk] = []
        used_ids: dict[str, int] = {}
        ordinals: dict[tuple[tuple[str, ...], str], int] = {}
        local_types = frozenset(self.local_types)
        source_file = self.source_file
        extract = cand.extract
        for order, (group, span, chunk_facts) in enumerate(zip(groups, spans, facts), start=1):
            start_byte, end_byte = span
            first, last, symbols, refs, apis, base_dots = chunk_facts
            kind = group.kind
            scope = group.scope
            if kind in _ORDINAL_KINDS or group.name is None:
                key = (scope, kind)
                ordinal = ordinals[key] = ordinals.get(key, 0) + 1
                base_name = str(ordinal)
            else:
                base_name = group.name
            name = ".".join(scope + (base_name,)) if scope else base_name
            chunk_id = f"{source_file}:{kind}:{name}"
            seen = used_ids.get(chunk_id, 0) + 1
            used_ids[chunk_id] = seen
            if seen > 1:
                chunk_id = f"{chunk_id}#{seen}"

            code_text = body[first:last]
            code_mask = code_text if mask is body else mask[first:last]
            scan = code_mask if scan_text is mask else scan_text[first:last]
            symbol_candidates, api_candidates, reference_candidates = extract(
                code_text, scan, symbols, refs, apis, base_dots, local_types
            )
            chunks.append(
                Chunk(
                    chunk_id=chunk_id,
                    chunk_order=order,
                    chunk_kind=kind,
                    node_kind="+".join(group.node_types),
                    name=name,
                    span=Span(group.start_line + 1, group.end_line + 1, start_byte, end_byte),
                    code_text=code_text,
                    symbol_candidates=symbol_candidates,
                    api_call_candidates=api_candidates,
                    reference_candidates=reference_candidates,
                    code_mask=code_mask,
                    surrounding_context="" if kind in _HEADER_KINDS else self._context(group, scan),
                )
            )
        return tuple(chunks)

    def _context(self, group: _Group, scan: str) -> str:
        scope = group.scope
        own_name = group.name if group.kind == KIND_FUNCTION else None  # `func r()` does not use a member `r`
        used: list[tuple[int, int]] = []
        for name, lines in self._visible_members(scope):
            # The substring test is cheap and rules out most members.
            if name in scan and name != own_name and _word_pattern(name).search(scan) is not None:
                used.append(lines)
        first_line, last_line = group.start_line, group.end_line
        ranges = self._scope_headers(scope).union(used) if used else self._scope_headers(scope)
        # The chunk's own declaration is not context.
        key = tuple(sorted([r for r in ranges if r[0] < first_line or r[1] > last_line]))
        context = self.contexts.get(key)
        if context is None:
            context = self.contexts[key] = "\n".join([self._range_text(line_range) for line_range in key])
        return context

    def _visible_members(self, scope: tuple[str, ...]) -> list[tuple[str, tuple[int, int]]]:
        """Members a chunk of ``scope`` can name: an inner class's member shadows an outer one."""
        visible = self.visible.get(scope)
        if visible is None:
            merged: dict[str, tuple[int, int]] = {}
            for depth in range(len(scope) + 1):
                merged.update(self.members.get(scope[:depth], {}))
            visible = self.visible[scope] = list(merged.items())
        return visible

    def _scope_headers(self, scope: tuple[str, ...]) -> set[tuple[int, int]]:
        """Top-level header lines plus the headers of the classes enclosing ``scope``."""
        headers = self.scope_headers.get(scope)
        if headers is None:
            headers = set(self.header_lines)
            for depth in range(1, len(scope) + 1):
                header = self.class_headers.get(scope[:depth])
                if header is not None:
                    headers.add(header)
            self.scope_headers[scope] = headers
        return headers

    def _range_text(self, line_range: tuple[int, int]) -> str:
        text = self.range_texts.get(line_range)
        if text is None:
            start, end = self.line_start(line_range[0]), self.ends[line_range[1]]
            text = self.range_texts[line_range] = self.text(start, end)
        return text

    # ------------------------------------------------------------ invariants
    def _check(self, chunks: tuple[Chunk, ...]) -> None:
        # One pass over the chunks: the bytes between two chunks must be blank,
        # chunks must not overlap and must start and end on non-blank lines,
        # so every non-blank line is in exactly one chunk.
        src = self.src
        previous_end = self.body_start
        previous_order = 0
        ids: set[str] = set()
        for chunk in chunks:
            span = chunk.span
            start_byte, end_byte = span.start_byte, span.end_byte
            text = chunk.code_text
            problem = None
            if src[start_byte:end_byte].decode("utf-8") != text:
                problem = "code_text differs from the span's bytes"
            elif chunk.chunk_order <= previous_order:
                problem = f"chunk_order {chunk.chunk_order} not increasing"
            elif chunk.chunk_id in ids:
                problem = "duplicate chunk_id"
            elif start_byte < previous_end:
                problem = "overlaps the previous chunk"
            elif src[previous_end:start_byte].strip():
                problem = "non-blank text before it belongs to no chunk"
            # Blank means ASCII whitespace only, as in is_blank: a line holding a
            # no-break space is content and must be in a chunk.
            elif not text.partition("\n")[0].encode("utf-8").strip() or not text.rpartition("\n")[2].encode("utf-8").strip():
                problem = "span starts or ends on a blank line"
            elif len(chunk.code_mask) != len(text):
                problem = "code_mask length differs from code_text"
            if problem is not None:
                raise AssertionError(f"{self.source_file} chunk {chunk.chunk_id}: {problem}")
            ids.add(chunk.chunk_id)
            previous_order = chunk.chunk_order
            previous_end = end_byte
        if src[previous_end:].strip():
            raise AssertionError(f"{self.source_file}: non-blank text after the last chunk is in no chunk")


def _absorb(target: _Piece, piece: _Piece) -> None:
    """Merge a piece that shares a line with ``target`` into it."""
    if target.attach != _DECL and piece.attach == _DECL:
        target.kind, target.attach, target.name, target.scope = piece.kind, _DECL, piece.name, piece.scope
        target.node_types = []
    target.end_line = max(target.end_line, piece.end_line)
    if piece.attach == _DECL:
        for node_type in piece.node_types:
            if node_type not in target.node_types:
                target.node_types.append(node_type)
    target.symbols.extend(piece.symbols)
    target.refs.extend(piece.refs)


def _child_text(node: Node, child_type: str) -> str | None:
    for child in node.children:
        if child.type == child_type:
            text = child.text
            return text.decode("utf-8") if text is not None else None
    return None


def _is_bare_tool(node: Node) -> bool:
    # Godot 3 `tool` parses as an expression statement holding one identifier.
    if node.named_child_count != 1:
        return False
    child = node.named_children[0]
    return child.type == "identifier" and child.text == b"tool"


def _string_content(src: bytes, start: int, end: int) -> tuple[int, int] | None:
    """Byte range between the quotes of a string-like literal, if it has quotes."""
    position = start
    while position < end and src[position : position + 1] in (b"r", b"&", b"^"):
        position += 1
    quote = src[position : position + 3]
    if quote in (b'"""', b"'''"):
        width = 3
    elif quote[:1] in (b'"', b"'"):
        width = 1
    else:
        return None
    content_start = position + width
    closed = end - width >= content_start and src[end - width : end] == quote[:width]
    content_end = end - width if closed else end  # an unterminated literal runs to its end
    return content_start, max(content_end, content_start)


def _blank(text: str, ranges: list[tuple[int, int]], fill: str = " ") -> str:
    """``text`` with each character range replaced by ``fill`` characters, line breaks kept."""
    if not ranges:
        return text
    parts: list[str] = []
    cursor = 0
    for start, end in sorted(ranges):
        if end <= cursor:
            continue
        if start < cursor:
            start = cursor
        parts.append(text[cursor:start])
        piece = text[start:end]
        if "\n" in piece or "\r" in piece:
            parts.append(_NOT_NEWLINE.sub(fill, piece))
        else:
            parts.append(fill * len(piece))
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


@lru_cache(maxsize=4096)
def _word_pattern(name: str) -> re.Pattern[str]:
    """``name`` with no word character on either side."""
    literal = re.escape(name)
    # The literal comes first so that the regex engine searches for it
    # directly; the lookbehind after it checks the character before it.
    return re.compile(rf"{literal}(?<!\w{literal})(?!\w)")
