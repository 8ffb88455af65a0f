"""Direct chunker: scenes, resources, project.godot, .import, .uid and other text, no AST.

Godot's text formats (project.godot, .tscn, .tres, .import, .cfg) are all
written by the engine's VariantParser/ConfigFile: `[tag attr=value ...]`
headers followed by `key = value` lines whose values may run over many lines
(arrays, dictionaries, strings with newlines). The chunker scans lines with a
small string/bracket tracker instead of a full parser so that broken files
still come out fully covered: whatever fits no block becomes a "fragment".

Pure: bytes in, ChunkingResult out, no I/O, never raises on bad input.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.chunking.positions import byte_position as _position
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

CHUNKER_VERSION = "direct/4"  # bump when output for some input changes

# Kinds cut by the INI/variant scanner vs. the plain line-based ones.
_SCENE_KINDS = frozenset({SourceKind.SCENE, SourceKind.RESOURCE})
_INI_KINDS = frozenset({SourceKind.PROJECT_CONFIG, SourceKind.IMPORT_META, SourceKind.CONFIG})
_LINE_KINDS = frozenset({SourceKind.UID, SourceKind.IGNORE})
SOURCE_KINDS = _SCENE_KINDS | _INI_KINDS | _LINE_KINDS | frozenset({SourceKind.TEXT})

# Scene/resource header tags and the chunk kind each becomes.
_SCENE_TAG_KIND = {
    "gd_scene": "header",
    "gd_resource": "header",
    "ext_resource": "ext_resource",
    "sub_resource": "sub_resource",
    "node": "node",
    "connection": "connection",
    "editable": "editable",
    "resource": "resource",
}

# Chunk kinds cut by the scene and INI scanners: their candidates are the file's engine names
# (node and resource types, property and setting keys, constructors), and every other identifier
# in their text is the format's own syntax (node, name, type, parent, ExtResource, id...).
STRUCTURED_CHUNK_KINDS = frozenset(_SCENE_TAG_KIND.values()) | frozenset(
    {"section", "config_version", "features", "top_level", "input_action", "fragment"}
)

# Only used to recover from an unterminated value: a line that looks like a
# header ends the broken value so the rest of the file keeps its structure.
_SCENE_HEADER_LIKE = re.compile(
    r"^\s*\[(?:gd_scene|gd_resource|ext_resource|sub_resource|node|connection|editable|resource)\b.*\]\s*$"
)
_INI_HEADER_LIKE = re.compile(r"^\s*\[(?!(?:true|false|null|inf|nan)\])[A-Za-z_][A-Za-z0-9_./ -]*\]\s*$")

_SPECIAL = re.compile(r'["\\\[\]{}()]')
_OPENERS = "[{("
_CLOSERS = "]})"

# Tokens of a variant value; strings may span lines (DOTALL), StringName (&"")
# and NodePath (^"") are strings too. A string never closed runs to the end of
# the text as one token: trying to close it again from every later quote made a
# line of escaped quotes quadratic (the possessive ``*+`` gives nothing back).
_TOKEN = re.compile(
    r'(?P<str>[&^]?"(?:[^"\\]|\\.)*+(?:"|\\?\Z))'
    r"|(?P<id>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<num>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
    r"|(?P<p>\S)",
    re.S,
)
_ATTR_KEY = re.compile(r"[^\s=]+")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RES_IN_TEXT = re.compile(r"res://[^\s\"'<>|;,()\[\]{}]+")
_UID_IN_TEXT = re.compile(r"uid://[A-Za-z0-9_]+")
_ESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}

# Constructors that are file-format plumbing, not engine API evidence.
_NOT_SYMBOLS = frozenset({"ExtResource", "SubResource", "Object"})
# Chunk kinds whose `key = value` keys are engine property/setting names.
_KEYED_KINDS = frozenset({"node", "sub_resource", "resource", "section", "top_level", "fragment"})
# Sections of an .import file that say where the imported copy is (importer, type, path, uid, metadata,
# source_file, dest_files): their keys are the file format's, not engine names (`path` is not the Path node).
_FORMAT_SECTIONS = frozenset({"remap", "deps"})


# --------------------------------------------------------------------------- lines


@dataclass(frozen=True)
class _Line:
    text: str  # without the line terminator (\n or \r\n)
    start_byte: int
    end_byte: int  # end of text, before the terminator

    @property
    def blank(self) -> bool:
        return not self.text.strip()


def _split_lines(source_bytes: bytes, offset: int) -> list[_Line]:
    """Lines of the already-validated UTF-8 body starting at `offset` (after a BOM).

    Splitting the bytes on b"\\n" is safe in UTF-8 and gives byte offsets
    directly; only "\\n" ends a line, as in Godot, and a "\\r" before it is
    part of the terminator.
    """
    lines: list[_Line] = []
    pos = offset
    for raw in source_bytes[offset:].split(b"\n"):
        content = raw[:-1] if raw.endswith(b"\r") else raw
        lines.append(_Line(content.decode("utf-8"), pos, pos + len(content)))
        pos += len(raw) + 1
    return lines


# --------------------------------------------------------------------------- value tracking


@dataclass
class _ValueState:
    """Open strings and brackets of a value that may continue on later lines."""

    in_string: bool = False
    string_start: tuple[int, int] = (0, 0)  # (line index, column) of the open quote
    stack: list[tuple[int, int, str]] = field(default_factory=list)

    @property
    def open(self) -> bool:
        return self.in_string or bool(self.stack)

    def feed(self, text: str, line: int, col: int = 0) -> None:
        pos = col
        while True:
            m = _SPECIAL.search(text, pos)
            if m is None:
                return
            c = m.group()
            i = m.start()
            pos = i + 1
            if self.in_string:
                if c == "\\":
                    pos = i + 2  # the escaped character never closes the string
                elif c == '"':
                    self.in_string = False
            elif c == '"':
                self.in_string = True
                self.string_start = (line, i)
            elif c in _OPENERS:
                self.stack.append((line, i, c))
            elif c in _CLOSERS and self.stack:
                # A stray closer is ignored rather than driving depth negative.
                self.stack.pop()

    def culprit(self) -> tuple[int, int]:
        """Where the value that never closed was opened (innermost open token)."""
        if self.in_string:
            return self.string_start
        line, col, _ = self.stack[-1]
        return line, col


def _find_header_end(text: str, start: int) -> int | None:
    in_string = False
    depth = 0
    pos = start
    while True:
        m = _SPECIAL.search(text, pos)
        if m is None:
            return None
        c = m.group()
        i = m.start()
        pos = i + 1
        if in_string:
            if c == "\\":
                pos = i + 2
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in _OPENERS:
            depth += 1
        elif c in _CLOSERS:
            depth -= 1
            if depth == 0:
                return i


def _unquote(value: str) -> str:
    v = value.strip()
    if v[:1] in "&^" and v[1:2] == '"':
        v = v[1:]
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), v[1:-1])
    return v


def _parse_attrs(inner: str) -> tuple[str, dict[str, str]]:
    """Tag and raw attribute values of a header body `tag a=1 b="x" c=ExtResource( 1 )`."""
    s = inner.strip()
    m = re.match(r"\S+", s)
    if m is None:
        return "", {}
    tag = m.group()
    attrs: dict[str, str] = {}
    pos = m.end()
    n = len(s)
    while pos < n:
        while pos < n and s[pos].isspace():
            pos += 1
        km = _ATTR_KEY.match(s, pos)
        if km is None:
            break
        key = km.group()
        pos = km.end()
        if pos >= n or s[pos] != "=":
            attrs.setdefault(key, "")
            continue
        pos += 1
        # A value runs to the next whitespace outside strings and brackets,
        # which keeps Godot 3's `ExtResource( 1 )` in one piece.
        start = pos
        in_string = False
        depth = 0
        while pos < n:
            c = s[pos]
            if in_string:
                if c == "\\":
                    pos += 1
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif c in _OPENERS:
                depth += 1
            elif c in _CLOSERS:
                depth -= 1
            elif c.isspace() and depth <= 0:
                break
            pos += 1
        attrs.setdefault(key, s[start:pos])
    return tag, attrs


# --------------------------------------------------------------------------- scanning


@dataclass
class _Item:
    """One logical piece of a file: a header, a `key = value` (maybe many lines), a comment..."""

    kind: str  # "comment" | "header" | "bad_header" | "property" | "stray"
    first: int  # 0-based line index
    last: int
    key: str = ""
    tag: str = ""
    section: str = ""  # INI section name
    attrs: dict[str, str] = field(default_factory=dict)
    text: str = ""  # header line text
    comment_col: int = -1  # column of a comment after a header's `]`


def _error(lines: list[_Line], line: int, col: int, message: str, end_line: int | None = None) -> SourceError:
    el = line if end_line is None else end_line
    return SourceError(line + 1, col + 1, el + 1, len(lines[el].text) + 1, message)


def _scan(lines: list[_Line], header_like: re.Pattern[str]) -> tuple[list[_Item], list[SourceError]]:
    items: list[_Item] = []
    errors: list[SourceError] = []
    i = 0
    n = len(lines)
    # Continuation lines read so far; past the budget an unterminated string
    # stops at the next header-looking line too, which keeps scanning linear.
    continued = 0
    budget = 2 * n + 10_000
    while i < n:
        text = lines[i].text
        stripped = text.lstrip()
        col = len(text) - len(stripped)
        if not stripped:
            i += 1
            continue
        if stripped[0] in ";#":
            items.append(_Item("comment", i, i, comment_col=col))
            i += 1
            continue
        if stripped[0] == "[":
            end = _find_header_end(text, col)
            if end is None:
                items.append(_Item("bad_header", i, i, text=text))
                errors.append(_error(lines, i, col, "unclosed section header: no matching ']' on this line"))
                i += 1
                continue
            tag, attrs = _parse_attrs(text[col + 1 : end])
            item = _Item("header", i, i, tag=tag, attrs=attrs, text=text, section=text[col + 1 : end].strip())
            rest = text[end + 1 :]
            rest_stripped = rest.lstrip()
            if rest_stripped:
                if rest_stripped[0] in ";#":
                    item.comment_col = end + 1 + len(rest) - len(rest_stripped)
                else:
                    errors.append(_error(lines, i, end + 1, "unexpected text after section header"))
            items.append(item)
            i += 1
            continue
        eq = _find_assignment(text, col)
        if eq is None:
            items.append(_Item("stray", i, i))
            errors.append(_error(lines, i, col, "expected 'key = value', a section header or a comment"))
            i += 1
            continue
        key = _unquote(text[col:eq])
        state = _ValueState()
        state.feed(text, i, eq + 1)
        last = i
        j = i + 1
        cut: int | None = None
        while state.open and j < n:
            # Outside a string no value line can look like a header, so such a
            # line means the value was never closed. Inside a string it might be
            # text, unless the budget says broken strings are eating the file.
            if (not state.in_string or continued > budget) and header_like.match(lines[j].text):
                cut = j
                break
            state.feed(lines[j].text, j)
            continued += 1
            last = j
            j += 1
        if state.open:
            if cut is None:
                # Open at end of file: end the value before the next
                # header-looking line and replay it to know what was open there.
                cut = next((k for k in range(i + 1, n) if header_like.match(lines[k].text)), n)
                state = _ValueState()
                state.feed(text, i, eq + 1)
                for k in range(i + 1, cut):
                    state.feed(lines[k].text, k)
            oline, ocol = state.culprit()
            last = max(k for k in range(i, cut) if not lines[k].blank)
            errors.append(
                _error(lines, oline, ocol, f"unterminated multi-line value of '{key}' (opened at line {oline + 1})", last)
            )
            j = cut
        items.append(_Item("property", i, last, key=key))
        i = j
    return items, errors


def _find_assignment(text: str, col: int) -> int | None:
    """Column of the `=` of a `key = value` line; keys may be quoted."""
    if text[col] == '"':
        close = _find_string_end(text, col)
        if close is None:
            return None
        eq = text.find("=", close + 1)
    else:
        eq = text.find("=", col)
    if eq <= col:
        return None
    return eq


def _find_string_end(text: str, start: int) -> int | None:
    pos = start + 1
    while pos < len(text):
        c = text[pos]
        if c == "\\":
            pos += 2
            continue
        if c == '"':
            return pos
        pos += 1
    return None


# --------------------------------------------------------------------------- segments


@dataclass
class _Segment:
    kind: str
    name: str
    node_kind: str
    items: list[_Item] = field(default_factory=list)
    header: _Item | None = None


class _Builder:
    """Groups items into segments; comments wait and go to whatever follows them."""

    def __init__(self) -> None:
        self.segments: list[_Segment] = []
        self.pending: list[_Item] = []

    @property
    def current(self) -> _Segment | None:
        return self.segments[-1] if self.segments else None

    def start(self, seg: _Segment, item: _Item) -> None:
        seg.items.extend(self.pending)
        self.pending.clear()
        seg.items.append(item)
        self.segments.append(seg)

    def cont(self, item: _Item) -> None:
        cur = self.current
        if cur is None:
            raise AssertionError("cont() without a segment")
        cur.items.extend(self.pending)
        self.pending.clear()
        cur.items.append(item)

    def finish(self) -> list[_Segment]:
        if self.pending:
            cur = self.current
            if cur is None:
                first = self.pending[0].first
                self.segments.append(_Segment("comment", str(first + 1), "comment", list(self.pending)))
            else:
                cur.items.extend(self.pending)
            self.pending.clear()
        return self.segments


def _fragment(item: _Item) -> _Segment:
    return _Segment("fragment", str(item.first + 1), "fragment")


def _scene_segments(items: list[_Item], lines: list[_Line], errors: list[SourceError]) -> list[_Segment]:
    b = _Builder()
    root = ""
    headers = 0  # headers (good or broken) seen so far
    for item in items:
        cur = b.current
        if item.kind == "comment":
            b.pending.append(item)
        elif item.kind == "bad_header":
            b.start(_fragment(item), item)
        elif item.kind == "header":
            kind = _SCENE_TAG_KIND.get(item.tag, "section")
            name, root = _scene_block_name(kind, item, root)
            b.start(_Segment(kind, name, item.tag, header=item), item)
        else:
            if cur is None:
                b.start(_fragment(item), item)
            else:
                b.cont(item)
            if item.kind == "property" and not headers:
                errors.append(_error(lines, item.first, 0, "property line before any section header", item.last))
        if item.kind in ("header", "bad_header"):
            headers += 1
    return b.finish()


def _scene_block_name(kind: str, item: _Item, root: str) -> tuple[str, str]:
    """Chunk name of a scene block, and the (maybe newly known) root node name."""
    a = item.attrs
    line_name = str(item.first + 1)
    if kind == "header":
        return item.tag, root
    if kind in ("ext_resource", "sub_resource"):
        return (_unquote(a["id"]) if a.get("id") else line_name), root
    if kind == "node":
        name = _unquote(a["name"]) if "name" in a else line_name
        if "parent" not in a:
            return name, (root or name)
        return _node_path(root, f"{_unquote(a['parent'])}/{name}"), root
    if kind == "connection":
        # from/to are paths relative to the root; resolving them like node
        # names makes a connection name point at the node chunks it joins.
        f = {k: _unquote(a.get(k, "")) for k in ("from", "signal", "to", "method")}
        src = _node_path(root, f["from"])
        dst = _node_path(root, f["to"])
        return f"{src}.{f['signal']}->{dst}.{f['method']}", root
    if kind == "editable":
        return (_node_path(root, _unquote(a["path"])) if "path" in a else line_name), root
    if kind == "resource":
        return "resource", root
    return item.tag or line_name, root


def _node_path(root: str, rel: str) -> str:
    """Path of a node from the root's name and a path relative to the root ("." is the root)."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not root:
        return "/".join(parts) or rel
    return "/".join([root, *parts])


def _ini_segments(items: list[_Item], lines: list[_Line], errors: list[SourceError], *, project: bool) -> list[_Segment]:
    """INI-style files; `project` turns on the project.godot special cases."""
    b = _Builder()
    section: str | None = None  # None: before any section
    broken = False  # after a bad header, lines belong to its fragment
    input_header_open = False  # the [input] header still waits for its first action
    for item in items:
        cur = b.current
        if item.kind == "comment":
            b.pending.append(item)
            continue
        if item.kind == "bad_header":
            b.start(_fragment(item), item)
            broken = True
            continue
        if item.kind == "header":
            section = item.section
            broken = False
            b.start(_Segment("section", section, "section", header=item), item)
            input_header_open = project and section == "input"
            continue
        if broken or (cur is None and item.kind == "stray"):
            if cur is not None and cur.kind == "fragment":
                b.cont(item)
            else:
                b.start(_fragment(item), item)
            continue
        if item.kind == "stray":
            b.cont(item)
            continue
        key = item.key
        if section is None:
            if project and key == "config_version":
                b.start(_Segment("config_version", key, "assignment"), item)
            elif project and key == "config/features":
                b.start(_Segment("features", key, "assignment"), item)
            elif cur is not None and cur.kind == "top_level":
                b.cont(item)
            else:
                b.start(_Segment("top_level", key, "assignment"), item)
        elif project and section == "input":
            if input_header_open and cur is not None:
                cur.kind = "input_action"
                cur.name = key
                cur.node_kind = "section+assignment"
                b.cont(item)
                input_header_open = False
            else:
                b.start(_Segment("input_action", key, "assignment"), item)
        elif project and section == "application" and key == "config/features":
            b.start(_Segment("features", key, "assignment"), item)
        elif cur is not None and cur.kind == "features" and section is not None:
            # The rest of [application] after the features line.
            b.start(_Segment("section", section, "section"), item)
        elif cur is not None:
            b.cont(item)
        else:
            b.start(_fragment(item), item)
    return b.finish()


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class _ExtResource:
    path: str
    line_text: str
    order: int


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "p"
        out.append((kind, m.group()))
    return out


def _string_refs(content: str, res: list[str], uids: list[str]) -> None:
    body = content[1:] if content.startswith("*") else content  # autoload "*res://x.gd"
    if body.startswith("res://"):
        res.append(body)
    else:
        res.extend(_RES_IN_TEXT.findall(content))
    uids.extend(_UID_IN_TEXT.findall(content))


def _dedupe(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


@dataclass
class _Candidates:
    symbols: tuple[str, ...] = ()
    api_calls: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    ext_ids: tuple[str, ...] = ()


def _variant_candidates(seg: _Segment, lines: list[_Line], ext: dict[str, _ExtResource]) -> _Candidates:
    symbols: list[str] = []
    res: list[str] = []
    uids: list[str] = []
    ext_ids: list[str] = []
    keys: list[str] = []
    signals: list[str] = []
    script_calls: list[str] = []
    for item in seg.items:
        if item.kind == "comment":
            continue
        if item.kind == "property":
            keys.append(item.key)
        text = "\n".join(lines[k].text for k in range(item.first, item.last + 1))
        if item.kind == "header" and item.comment_col >= 0:
            text = text[: item.comment_col]
        toks = _tokens(text)
        if item.kind == "property" and item.key == "script/source" and toks and toks[-1][0] == "str":
            # A built-in script: the engine names its code uses are what its search looks for.
            script = _builtin_script_candidates(_unquote(toks[-1][1]))
            symbols.extend(script.symbols)
            script_calls.extend(script.api_calls)
        for idx, (kind, value) in enumerate(toks):
            nxt = toks[idx + 1] if idx + 1 < len(toks) else ("", "")
            nxt2 = toks[idx + 2] if idx + 2 < len(toks) else ("", "")
            prev = toks[idx - 1] if idx > 0 else ("", "")
            if kind == "str":
                _string_refs(_unquote(value), res, uids)
            elif kind != "id":
                continue
            elif value == "type" and nxt == ("p", "=") and nxt2[0] == "str" and prev[1] not in ("/", ".", ":"):
                # `tracks/0/type = "value"` is an animation key, not a class.
                t = _unquote(nxt2[1])
                if _IDENT.match(t):
                    symbols.append(t)
            elif value == "signal" and seg.kind == "connection" and nxt == ("p", "=") and nxt2[0] == "str":
                # The connected signal: an engine signal (which Godot 4 may have renamed) or the project's own.
                name = _unquote(nxt2[1])
                if _IDENT.match(name):
                    signals.append(name)
            elif value in ("format", "config_version") and nxt == ("p", "=") and nxt2[0] == "num":
                if (value == "format" and seg.kind == "header") or (value == "config_version" and seg.kind == "config_version"):
                    symbols.append(f"{value}={nxt2[1]}")
            elif nxt == ("p", "("):
                if value == "ExtResource" and nxt2[0] in ("str", "num"):
                    ext_id = _unquote(nxt2[1])
                    ext_ids.append(ext_id)
                    if ext_id in ext:
                        res.append(ext[ext_id].path)
                elif value == "Object" and nxt2[0] == "id":
                    symbols.append(nxt2[1])
                elif value not in _NOT_SYMBOLS:
                    symbols.append(value)
    keyed = seg.kind in _KEYED_KINDS and not (seg.kind == "section" and seg.name in _FORMAT_SECTIONS)
    api = _dedupe(keys + script_calls) if keyed else _dedupe(signals)
    return _Candidates(_dedupe(symbols), api, _dedupe(res) + tuple(u for u in _dedupe(uids) if u not in res), _dedupe(ext_ids))


def _builtin_script_candidates(source: str) -> _Candidates:
    """The symbol and API call candidates of a built-in script's code, as the GDScript chunker finds them."""
    chunks = parse_gdscript("built-in.gd", source.encode("utf-8")).chunks
    return _Candidates(
        symbols=_dedupe(s for c in chunks for s in c.symbol_candidates),
        api_calls=_dedupe(a for c in chunks for a in c.api_call_candidates),
    )


def _text_candidates(text: str) -> _Candidates:
    return _Candidates(references=_dedupe(_RES_IN_TEXT.findall(text)) + _dedupe(_UID_IN_TEXT.findall(text)))


# --------------------------------------------------------------------------- result assembly


@dataclass
class _Piece:
    """A chunk before ids and order are assigned."""

    kind: str
    name: str
    node_kind: str
    first: int
    last: int
    comment_cols: dict[int, int]
    cands: _Candidates
    context: str = ""


def _mask(code_text: str, first: int, comment_cols: dict[int, int]) -> str:
    if not comment_cols:
        return code_text
    out = []
    for k, piece in enumerate(code_text.split("\n")):
        col = comment_cols.get(first + k)
        if col is not None and col < len(piece):
            # Keep the `;`/`#` marker, blank what follows; "\r" stays a line break.
            tail = "".join("\r" if c == "\r" else " " for c in piece[col + 1 :])
            piece = piece[: col + 1] + tail
        out.append(piece)
    return "\n".join(out)


def _assign(source_file: str, source_bytes: bytes, lines: list[_Line], pieces: list[_Piece]) -> tuple[Chunk, ...]:
    seen: dict[str, int] = {}
    chunks: list[Chunk] = []
    for order, p in enumerate(pieces, start=1):
        base = f"{source_file}:{p.kind}:{p.name}"
        count = seen.get(base, 0) + 1
        seen[base] = count
        chunk_id = base if count == 1 else f"{base}#{count}"
        start = lines[p.first].start_byte
        end = lines[p.last].end_byte
        code_text = source_bytes[start:end].decode("utf-8")
        chunks.append(
            Chunk(
                chunk_id=chunk_id,
                chunk_order=order,
                chunk_kind=p.kind,
                node_kind=p.node_kind,
                name=p.name,
                span=Span(p.first + 1, p.last + 1, start, end),
                code_text=code_text,
                symbol_candidates=p.cands.symbols,
                api_call_candidates=p.cands.api_calls,
                reference_candidates=p.cands.references,
                code_mask=_mask(code_text, p.first, p.comment_cols),
                surrounding_context=p.context,
            )
        )
    return tuple(chunks)


def _variant_pieces(source_kind: str, lines: list[_Line], errors: list[SourceError]) -> list[_Piece]:
    header_like = _SCENE_HEADER_LIKE if source_kind in _SCENE_KINDS else _INI_HEADER_LIKE
    items, scan_errors = _scan(lines, header_like)
    errors.extend(scan_errors)
    if source_kind in _SCENE_KINDS:
        segments = _scene_segments(items, lines, errors)
    else:
        segments = _ini_segments(items, lines, errors, project=source_kind == "project_config")
    ext: dict[str, _ExtResource] = {}
    if source_kind in _SCENE_KINDS:
        for seg in segments:
            h = seg.header
            if seg.kind == "ext_resource" and h is not None and "id" in h.attrs:
                ext.setdefault(_unquote(h.attrs["id"]), _ExtResource(_unquote(h.attrs.get("path", "")), h.text, len(ext)))
    pieces: list[_Piece] = []
    for seg in segments:
        cols: dict[int, int] = {}
        for item in seg.items:
            if item.comment_col >= 0:
                cols[item.first] = item.comment_col
        cands = _variant_candidates(seg, lines, ext)
        context = ""
        if seg.kind == "node":
            used = sorted((ext[e] for e in cands.ext_ids if e in ext), key=lambda r: r.order)
            context = "\n".join(r.line_text for r in used)
        pieces.append(_Piece(seg.kind, seg.name, seg.node_kind, seg.items[0].first, seg.items[-1].last, cols, cands, context))
    return pieces


def _line_pieces(source_kind: str, lines: list[_Line]) -> list[_Piece]:
    pieces: list[_Piece] = []
    for idx, line in enumerate(lines):
        if line.blank:
            continue
        stripped = line.text.lstrip()
        cols: dict[int, int] = {}
        if source_kind == "ignore" and stripped.startswith("#"):
            cols[idx] = len(line.text) - len(stripped)
            cands = _Candidates()
        else:
            cands = _text_candidates(line.text)
        pieces.append(_Piece("line", str(idx + 1), "line", idx, idx, cols, cands))
    return pieces


def _block_pieces(lines: list[_Line]) -> list[_Piece]:
    pieces: list[_Piece] = []
    idx = 0
    while idx < len(lines):
        if lines[idx].blank:
            idx += 1
            continue
        first = idx
        while idx + 1 < len(lines) and not lines[idx + 1].blank:
            idx += 1
        text = "\n".join(lines[k].text for k in range(first, idx + 1))
        pieces.append(_Piece("block", str(first + 1), "lines", first, idx, {}, _text_candidates(text)))
        idx += 1
    return pieces


def _check_invariants(source_bytes: bytes, lines: list[_Line], chunks: tuple[Chunk, ...]) -> None:
    """Raise AssertionError when the output breaks a contract: that is a chunker bug."""
    owner: dict[int, str] = {}
    ids: set[str] = set()
    prev_order = 0
    prev_end = -1
    for c in chunks:
        s = c.span
        if c.chunk_order <= prev_order:
            raise AssertionError(f"chunk_order not strictly increasing at {c.chunk_id}")
        prev_order = c.chunk_order
        if c.chunk_id in ids:
            raise AssertionError(f"duplicate chunk_id {c.chunk_id}")
        ids.add(c.chunk_id)
        if source_bytes[s.start_byte : s.end_byte].decode("utf-8") != c.code_text:
            raise AssertionError(f"span bytes do not match code_text in {c.chunk_id}")
        if not 1 <= s.start_line <= s.end_line <= len(lines):
            raise AssertionError(f"bad line range in {c.chunk_id}")
        if s.start_byte != lines[s.start_line - 1].start_byte or s.end_byte != lines[s.end_line - 1].end_byte:
            raise AssertionError(f"byte range does not match line range in {c.chunk_id}")
        if s.start_line <= prev_end:
            raise AssertionError(f"chunks overlap at {c.chunk_id}")
        prev_end = s.end_line
        if lines[s.start_line - 1].blank or lines[s.end_line - 1].blank:
            raise AssertionError(f"chunk {c.chunk_id} starts or ends on a blank line")
        if len(c.code_mask) != len(c.code_text) or [i for i, ch in enumerate(c.code_mask) if ch in "\r\n"] != [
            i for i, ch in enumerate(c.code_text) if ch in "\r\n"
        ]:
            raise AssertionError(f"code_mask shape differs from code_text in {c.chunk_id}")
        for ln in range(s.start_line, s.end_line + 1):
            owner[ln] = c.chunk_id
    for idx, line in enumerate(lines):
        if not line.blank and idx + 1 not in owner:
            raise AssertionError(f"non-blank line {idx + 1} belongs to no chunk")


# --------------------------------------------------------------------------- entry point


def _failed(source_file: str, source_kind: str, sha: str, error: SourceError) -> ChunkingResult:
    return ChunkingResult(source_file, source_kind, sha, PARSE_FAILED, (), (error,), CHUNKER_VERSION)


def chunk_direct(
    source_file: str,
    source_kind: str,
    source_bytes: bytes,
    *,
    expected_sha256: str | None = None,
    max_bytes: int = 10 * 1024 * 1024,
) -> ChunkingResult:
    """Cut one non-GDScript file into traceable chunks in file order."""
    if isinstance(source_bytes, (bytearray, memoryview)):
        source_bytes = bytes(source_bytes)
    if not isinstance(source_bytes, bytes):
        return _failed(source_file, source_kind, "", SourceError(1, 1, 1, 1, f"source is {type(source_bytes).__name__}, not bytes"))
    sha = hashlib.sha256(source_bytes).hexdigest()
    if source_kind not in SOURCE_KINDS:
        return _failed(
            source_file,
            source_kind,
            sha,
            SourceError(1, 1, 1, 1, f"unknown source kind {source_kind!r}; expected one of {sorted(SOURCE_KINDS)}"),
        )
    if len(source_bytes) > max_bytes:
        return _failed(
            source_file,
            source_kind,
            sha,
            SourceError(1, 1, 1, 1, f"file too large: {len(source_bytes)} bytes, over the limit of {max_bytes}"),
        )
    if expected_sha256 is not None and expected_sha256.lower() != sha:
        return _failed(
            source_file,
            source_kind,
            sha,
            SourceError(1, 1, 1, 1, f"sha256 mismatch: expected {expected_sha256}, content has {sha}"),
        )
    nul = source_bytes.find(b"\0")
    if nul >= 0:
        line, col = _position(source_bytes, nul)
        return _failed(
            source_file, source_kind, sha, SourceError(line, col, line, col, f"binary content: NUL byte at byte offset {nul}")
        )
    try:
        source_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(source_bytes, exc.start)
        return _failed(
            source_file,
            source_kind,
            sha,
            SourceError(line, col, line, col, f"invalid UTF-8 at byte offset {exc.start}: {exc.reason}"),
        )
    offset = 3 if source_bytes.startswith(b"\xef\xbb\xbf") else 0
    lines = _split_lines(source_bytes, offset)
    if all(line.blank for line in lines):
        return ChunkingResult(source_file, source_kind, sha, PARSE_EMPTY, (), (), CHUNKER_VERSION)

    errors: list[SourceError] = []
    if source_kind in _SCENE_KINDS or source_kind in _INI_KINDS:
        pieces = _variant_pieces(source_kind, lines, errors)
    elif source_kind in _LINE_KINDS:
        pieces = _line_pieces(source_kind, lines)
    else:
        pieces = _block_pieces(lines)
    chunks = _assign(source_file, source_bytes, lines, pieces)
    _check_invariants(source_bytes, lines, chunks)
    errors.sort(key=lambda e: (e.line, e.column))
    status = PARSE_PARTIAL if errors else PARSE_OK
    return ChunkingResult(source_file, source_kind, sha, status, chunks, tuple(errors), CHUNKER_VERSION)
