"""The project's own symbols: what each script, scene and autoload defines.

A member access in a chunk is only version evidence when its receiver is an
engine object. Deciding that needs what the project itself says about its
names: which scripts declare which members (through their ``extends`` chains,
``class_name``s, inner classes and preloaded scripts), which autoloads exist,
and which node types the scenes that attach a script give to ``$Path`` and
``get_node("Path")``. This module builds that from the project's files.

Pure and tolerant: every scanner is a linear pass over text that may be
broken or hostile, and nothing here raises on bad input (a declaration it
cannot read is simply not recorded). No regular expression with overlapping
quantifiers is used.

Two shapes:

- ``ProjectIndex``: the whole project (stored per analysis, JSON).
- ``FileScope``: the slice one script's chunks need (what its names resolve
  to), small and deterministic, so it can travel with a judgment request and
  be part of the judgment reuse key.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

PROJECT_INDEX_VERSION = "symbols/3"

# Keywords that may precede a declaration's head word in Godot 3 and 4.
_PREFIX_WORDS = frozenset(
    {
        "static",
        "onready",
        "remote",
        "master",
        "puppet",
        "remotesync",
        "mastersync",
        "puppetsync",
        "sync",
        "slave",
        "export",
    }
)
_HEAD_WORDS = frozenset({"func", "var", "const", "signal", "enum", "class", "class_name", "extends"})
_MAX_CHAIN = 16  # extends chains longer than this are a cycle or garbage
_MAX_TEXT = 4 << 20  # a file larger than this is not indexed (the chunker refuses it anyway)


# ---------------------------------------------------------------- lexing helpers


def mask_gdscript(text: str) -> str:
    """``text`` with comment and string bodies blanked (same length, same line breaks).

    Quotes stay, so a string's position is still visible; its content is read
    from the original text at the same offsets. One pass: jumps from one
    comment or quote to the next, and within a string from one quote,
    backslash or line break to the next.
    """
    out: list[str] = []
    n = len(text)
    i = 0
    while i < n:
        m = _OPENERS.search(text, i)
        if m is None:
            out.append(text[i:])
            break
        start = m.start()
        out.append(text[i:start])
        c = text[start]
        if c == "#":
            end = text.find("\n", start)
            end = n if end < 0 else end
            out.append(" " * (end - start))
            i = end
            continue
        q = c * 3 if text.startswith(c * 3, start) else c
        stop = _TRIPLE_STOP[c] if len(q) == 3 else _SINGLE_STOP[c]
        j = start + len(q)
        while j < n:
            sm = stop.search(text, j)
            if sm is None:
                j = n
                break
            j = sm.start()
            if text[j] == "\\":
                j += 2
                continue
            break
        j = min(j, n)
        closed = j < n and text.startswith(q, j)
        out.append(q)
        out.append(_NOT_NEWLINE.sub(" ", text[start + len(q) : j]))
        if closed:
            out.append(q)
            i = j + len(q)
        else:
            i = j
    masked = "".join(out)
    return masked if len(masked) == n else masked[:n].ljust(n)


_OPENERS = re.compile(r"[#\"']")
_SINGLE_STOP = {'"': re.compile(r'["\\\n]'), "'": re.compile(r"['\\\n]")}
_TRIPLE_STOP = {'"': re.compile(r'"""|\\'), "'": re.compile(r"'''|\\")}
_NOT_NEWLINE = re.compile(r"[^\n]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACKETS = re.compile(r"[()\[\]{}]")


def _is_ident_start(c: str) -> bool:
    return c.isalpha() or c == "_"


def _is_ident_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def read_ident(s: str, i: int) -> tuple[str, int]:
    """The identifier starting at ``i`` (``""`` when none) and the index after it."""
    m = _IDENT.match(s, i) if 0 <= i < len(s) else None
    return (m.group(), m.end()) if m else ("", i)


def skip_blank(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def skip_balanced(s: str, i: int) -> int:
    """Index after the bracket group opening at ``s[i]`` (len(s) when unbalanced)."""
    depth = 0
    for j in range(i, len(s)):
        ch = s[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(s)


def string_at(text: str, i: int) -> str | None:
    """The content of the string literal whose opening quote is at ``i`` (one line; None when none)."""
    if i >= len(text) or text[i] not in "\"'":
        return None
    q = text[i]
    j = i + 1
    while j < len(text) and text[j] != q and text[j] != "\n":
        j += 1
    if j >= len(text) or text[j] != q:
        return None
    return text[i + 1 : j]


def identifiers(mask: str) -> set[str]:
    """Every identifier of (masked) code (digits-led words such as ``2d`` give ``d``; harmless for a superset)."""
    return set(_IDENT.findall(mask))


def res_path(path: str, base_dir: str = "") -> str:
    """A ``res://`` (or script-relative) path as a project-relative path without ``res://``."""
    p = path.strip()
    if p.startswith("res://"):
        p = p[len("res://") :]
    elif base_dir and not p.startswith("/"):
        p = posixpath.join(base_dir, p)
    p = posixpath.normpath(p) if p else p
    return "" if p in (".", "") or p.startswith("..") else p


# ---------------------------------------------------------------- type references

# A member's declared or inferred type, before resolution:
#   "T:Name"   a type name as written (engine class, class_name, inner class, preload const)
#   "P:path"   a script loaded by path (preload/load of a .gd)
#   "S:path"   a scene or resource loaded by path (a PackedScene / Resource)
#   "N:path"   a node path ($Path, get_node("Path"))


def _expr_type(mask: str, text: str, i: int, base_dir: str) -> str:
    """The type of the expression starting at ``i`` when the code says it plainly ("" otherwise).

    Only a whole expression counts: ``$Sprite`` is a node, ``$Sprite.texture`` is not known here.
    """
    i = skip_blank(mask, i)
    if i < len(mask) and mask[i] in "{[":
        # A Dictionary or Array literal, the whole expression (`var controls = {}`): `controls.font_size` is a
        # key, `controls.size()` the container's own method, never another class's member.
        end = skip_balanced(mask, i)
        line_end = mask.find("\n", end)
        rest = mask[end : len(mask) if line_end < 0 else line_end]
        return ("T:Dictionary" if mask[i] == "{" else "T:Array") if not rest.strip() else ""
    if i < len(mask) and mask[i] in "$%":
        path = _node_path_at(mask, text, i)
        end = _node_path_end(mask, i)
        return f"N:{path}" if path and not _continues(mask, end) else ""
    word, j = read_ident(mask, i)
    if not word:
        return ""
    if word in ("preload", "load") and j < len(mask) and mask[j] == "(":
        k = skip_blank(mask, j + 1)
        s = string_at(text, k)
        if s is None:
            return ""
        p = res_path(s, base_dir)
        end = skip_balanced(mask, j)
        if not p:
            return ""
        if _continues(mask, end):
            # preload("x.gd").new() is an instance of the script; anything else is not known here.
            nxt, after = read_ident(mask, end + 1)
            if (
                nxt == "new"
                and p.endswith(".gd")
                and after < len(mask)
                and mask[after] == "("
                and not _continues(mask, skip_balanced(mask, after))
            ):
                return f"P:{p}"
            return ""
        return f"P:{p}" if p.endswith(".gd") else f"S:{p}"
    if word in ("get_node", "get_node_or_null") and j < len(mask) and mask[j] == "(":
        k = skip_blank(mask, j + 1)
        s = string_at(text, k)
        return f"N:{s}" if s and not _continues(mask, skip_balanced(mask, j)) else ""
    # Name.new() / Name.Inner.new()
    parts = [word]
    while j < len(mask) and mask[j] == ".":
        nxt, j2 = read_ident(mask, j + 1)
        if not nxt:
            break
        parts.append(nxt)
        j = j2
    if len(parts) >= 2 and parts[-1] == "new" and j < len(mask) and mask[j] == "(" and not _continues(mask, skip_balanced(mask, j)):
        return "T:" + ".".join(parts[:-1])
    return ""


def _continues(mask: str, i: int) -> bool:
    """Does a member access follow at ``i`` (``x.y``, ``x[0]``, ``x(...)``)?"""
    return i < len(mask) and mask[i] in ".[("


def _node_path_end(mask: str, i: int) -> int:
    j = i + 1
    if j < len(mask) and mask[j] in "\"'":
        k = mask.find(mask[j], j + 1)
        return k + 1 if k > 0 else len(mask)
    while j < len(mask) and (_is_ident_char(mask[j]) or mask[j] == "/"):
        j += 1
    return j


def _node_path_at(mask: str, text: str, i: int) -> str:
    """The node path of ``$A/B``, ``$"A/B"`` or ``%Name`` at ``i`` ("" when none)."""
    sigil = mask[i]
    j = i + 1
    if j < len(mask) and mask[j] in "\"'":
        s = string_at(text, j)
        return (("%" if sigil == "%" else "") + s) if s else ""
    k = j
    while k < len(mask) and (_is_ident_char(mask[k]) or mask[k] == "/"):
        k += 1
    path = mask[j:k].strip("/")
    if not path:
        return ""
    return ("%" + path) if sigil == "%" else path


def _type_annotation(mask: str, i: int) -> str:
    """The type name after ``:`` at ``i`` (``Array[...]`` gives Array); "" when none."""
    i = skip_blank(mask, i)
    word, j = read_ident(mask, i)
    if not word:
        return ""
    parts = [word]
    while j < len(mask) and mask[j] == ".":
        nxt, j2 = read_ident(mask, j + 1)
        if not nxt:
            break
        parts.append(nxt)
        j = j2
    return "T:" + ".".join(parts)


def declaration_type(mask: str, text: str, i: int, base_dir: str = "") -> str:
    """After a declared name at ``i``: ``: T``, ``:= expr``, ``= expr`` or ``as T`` -> a type reference ("" when none)."""
    i = skip_blank(mask, i)
    if i < len(mask) and mask[i] == ":":
        if i + 1 < len(mask) and mask[i + 1] == "=":
            return _expr_with_cast(mask, text, i + 2, base_dir)
        return _type_annotation(mask, i + 1)
    if i < len(mask) and mask[i] == "=" and not (i + 1 < len(mask) and mask[i + 1] == "="):
        return _expr_with_cast(mask, text, i + 1, base_dir)
    return ""


def _expr_with_cast(mask: str, text: str, i: int, base_dir: str) -> str:
    t = _expr_type(mask, text, i, base_dir)
    # `expr as T` at the end of the line wins: it is what the code asserts.
    end = mask.find("\n", i)
    end = len(mask) if end < 0 else end
    k = mask.rfind(" as ", i, end)
    between = mask[i:k] if k >= 0 else ""
    if k >= 0 and all(between.count(o) == between.count(c) for o, c in ("()", "[]", "{}")):
        cast = _type_annotation(mask, k + 4)
        if cast:
            return cast
    return t


# ---------------------------------------------------------------- scripts


@dataclass
class ClassSymbols:
    """One script or inner class: what it extends and the members it declares itself."""

    extends: str = ""  # "T:Name" | "P:path" | "" (a script without extends is a RefCounted/Reference)
    members: dict[str, str] = field(default_factory=dict)  # name -> func|var|const|signal|enum|class
    member_types: dict[str, str] = field(default_factory=dict)  # var/const name -> type reference
    inner: dict[str, ClassSymbols] = field(default_factory=dict)
    returns: dict[str, str] = field(default_factory=dict)  # func name -> declared return type reference

    def to_json(self) -> dict:
        return {
            "extends": self.extends,
            "members": dict(sorted(self.members.items())),
            "member_types": dict(sorted(self.member_types.items())),
            "inner": {k: v.to_json() for k, v in sorted(self.inner.items())},
            "returns": dict(sorted(self.returns.items())),
        }

    @classmethod
    def from_json(cls, d: dict) -> ClassSymbols:
        return cls(
            str(d.get("extends", "")),
            {str(k): str(v) for k, v in (d.get("members") or {}).items()},
            {str(k): str(v) for k, v in (d.get("member_types") or {}).items()},
            {str(k): cls.from_json(v) for k, v in (d.get("inner") or {}).items() if isinstance(v, dict)},
            {str(k): str(v) for k, v in (d.get("returns") or {}).items()},
        )


@dataclass
class ScriptSymbols(ClassSymbols):
    class_name: str = ""

    def to_json(self) -> dict:
        return {**super().to_json(), "class_name": self.class_name}

    @classmethod
    def from_json(cls, d: dict) -> ScriptSymbols:
        base = ClassSymbols.from_json(d)
        return cls(base.extends, base.members, base.member_types, base.inner, base.returns, str(d.get("class_name", "")))


def _logical_lines(mask: str) -> Iterable[tuple[int, int, int]]:
    """(start, end, indent) of each line that starts a statement (not inside brackets, not after a backslash)."""
    depth = 0
    i, n = 0, len(mask)
    continued = False
    while i < n:
        j = mask.find("\n", i)
        j = n if j < 0 else j
        k = i
        while k < j and mask[k] in " \t\r":
            k += 1
        if depth == 0 and not continued and k < j:
            yield i, j, k - i
        for bm in _BRACKETS.finditer(mask, i, j):
            if bm.group() in "([{":
                depth += 1
            elif depth > 0:
                depth -= 1
        tail = mask[i:j].rstrip(" \t\r")
        continued = tail.endswith("\\")
        i = j + 1
    return


_EXPORT_HINT_RE = re.compile(r"\bexport[ \t]*\([ \t]*([A-Za-z_]\w*)")


def _export_hint_type(mask: str, start: int, head: int) -> str:
    """Godot 3's ``export(NodePath) var target``: the hint's first word is the variable's type."""
    m = _EXPORT_HINT_RE.search(mask, start, head)
    return f"T:{m.group(1)}" if m else ""


def _strip_prefixes(mask: str, i: int, end: int) -> int:
    """Skip annotations (``@export(...)``) and prefix keywords (``static``, ``onready``, ``export(int)``)."""
    for _ in range(32):  # bounded: a line of prefixes longer than this is garbage
        i = skip_blank(mask, i)
        if i < end and mask[i] == "@":
            _, j = read_ident(mask, i + 1)
            if j < end and mask[j] == "(":
                j = min(skip_balanced(mask, j), end)
            i = j if j > i + 1 else i + 1
            continue
        word, j = read_ident(mask, i)
        if word in _PREFIX_WORDS:
            if j < end and mask[j] == "(":
                j = min(skip_balanced(mask, j), end)
            i = j
            continue
        return i
    return i


def scan_script(path: str, text: str) -> ScriptSymbols:
    """The declarations of one .gd file (never raises; unreadable lines are skipped)."""
    script = ScriptSymbols()
    if len(text) > _MAX_TEXT:
        return script
    mask = mask_gdscript(text)
    base_dir = posixpath.dirname(path)
    # Stack of (indent, ClassSymbols or None for a function body).
    stack: list[tuple[int, ClassSymbols | None]] = [(-1, script)]
    for start, end, indent in _logical_lines(mask):
        while len(stack) > 1 and indent <= stack[-1][0]:
            stack.pop()
        owner = stack[-1][1]
        if owner is None:
            continue  # inside a function body: locals are not the class's members
        i = _strip_prefixes(mask, start, end)
        head, j = read_ident(mask, i)
        if head not in _HEAD_WORDS:
            continue
        j = skip_blank(mask, j)
        if head == "extends":
            owner.extends = _extends_ref(mask, text, j, end, base_dir)
            continue
        name, k = read_ident(mask, j)
        if head == "enum" and not name:
            _enum_values(mask, j, owner)  # an unnamed enum: its values are the class's constants
            continue
        if not name:
            continue
        if head == "class_name":
            if owner is script:
                script.class_name = name
                rest = skip_blank(mask, k)
                if mask.startswith("extends", rest):
                    script.extends = _extends_ref(mask, text, skip_blank(mask, rest + 7), end, base_dir)
            continue
        if head == "class":
            inner = ClassSymbols()
            rest = skip_blank(mask, k)
            if mask.startswith("extends", rest):
                inner.extends = _extends_ref(mask, text, skip_blank(mask, rest + 7), end, base_dir)
            owner.inner.setdefault(name, inner)
            owner.members.setdefault(name, "class")
            stack.append((indent, owner.inner[name]))
            continue
        owner.members.setdefault(name, head)
        if head == "enum":
            _enum_values(mask, k, owner)
        if head == "func":
            stack.append((indent, None))
            paren = skip_blank(mask, k)
            if paren < end and mask[paren] == "(":
                after = skip_blank(mask, min(skip_balanced(mask, paren), end))
                if mask.startswith("->", after):
                    ret = _type_annotation(mask[:end], after + 2)
                    if ret and ret not in ("T:void", "T:Variant"):
                        owner.returns.setdefault(name, ret)
        elif head in ("var", "const"):
            t = declaration_type(mask[:end], text, k, base_dir) or _export_hint_type(mask, start, i)
            if t:
                owner.member_types.setdefault(name, t)
    return script


def _enum_values(mask: str, i: int, owner: ClassSymbols) -> None:
    """The values of the enum whose ``{`` follows ``i``: constants of the class, reachable bare."""
    brace = skip_blank(mask, i)
    if brace >= len(mask) or mask[brace] != "{":
        return
    end = skip_balanced(mask, brace)
    expect = True  # an identifier right after `{` or `,` is a value name
    p = brace + 1
    while p < end - 1:
        ch = mask[p]
        if ch == ",":
            expect = True
            p += 1
        elif expect and _is_ident_start(ch):
            word, p = read_ident(mask, p)
            owner.members.setdefault(word, "const")
            expect = False
        else:
            if not ch.isspace():
                expect = False
            p += 1


def _extends_ref(mask: str, text: str, i: int, end: int, base_dir: str) -> str:
    if i < end and mask[i] in "\"'":
        s = string_at(text, i)
        p = res_path(s or "", base_dir)
        return f"P:{p}" if p else ""
    word, j = read_ident(mask, i)
    if not word:
        return ""
    parts = [word]
    while j < end and mask[j] == ".":
        nxt, j = read_ident(mask, j + 1)
        if not nxt:
            break
        parts.append(nxt)
    return "T:" + ".".join(parts)


# ---------------------------------------------------------------- scenes and project.godot


@dataclass(frozen=True)
class SceneNode:
    path: str  # relative to the scene root ("" = the root)
    type: str  # engine class ("" for an instanced scene)
    script: str  # project-relative path of the attached script ("")
    instance: str  # project-relative path of the instanced scene ("")
    unique: bool = False

    def to_json(self) -> list:
        return [self.path, self.type, self.script, self.instance, self.unique]

    @classmethod
    def from_json(cls, v: list) -> SceneNode:
        path, type_, script, instance, unique = (list(v) + ["", "", "", "", False])[:5]
        return cls(str(path), str(type_), str(script), str(instance), bool(unique))


def _section_attrs(line: str) -> dict[str, str]:
    """``[node name="A" type="B" parent="." instance=ExtResource( 1 )]`` -> attributes (values unquoted)."""
    attrs: dict[str, str] = {}
    i, n = 1, len(line)
    _, i = read_ident(line, i)  # the section word
    while i < n:
        i = skip_blank(line, i)
        key, j = read_ident(line, i)
        if not key:
            i += 1
            continue
        j = skip_blank(line, j)
        if j >= n or line[j] != "=":
            i = j
            continue
        j = skip_blank(line, j + 1)
        if j < n and line[j] == '"':
            s = string_at(line, j)
            attrs[key] = s or ""
            i = j + len(s or "") + 2
        else:
            k = j
            while k < n and line[k] not in " \t]":
                if line[k] == "(":
                    k = skip_balanced(line, k)
                    break
                k += 1
            attrs[key] = line[j:k]
            i = k
    return attrs


def _resource_ref(value: str) -> str:
    """``ExtResource( 1 )`` / ``ExtResource("1_abc")`` -> ``1`` / ``1_abc`` ("" when not one)."""
    v = value.strip()
    if not v.startswith("ExtResource"):
        return ""
    a, b = v.find("("), v.rfind(")")
    if a < 0 or b <= a:
        return ""
    return v[a + 1 : b].strip().strip("\"'")


def scan_scene(path: str, text: str) -> list[SceneNode]:
    """Nodes of a .tscn: path, type, attached script, instanced scene (never raises)."""
    if len(text) > _MAX_TEXT:
        return []
    base_dir = posixpath.dirname(path)
    ext: dict[str, str] = {}
    nodes: list[SceneNode] = []
    current: dict | None = None

    def close() -> None:
        if current is not None:
            nodes.append(SceneNode(current["path"], current["type"], current["script"], current["instance"], current["unique"]))

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            close()
            current = None
            attrs = _section_attrs(line)
            word, _ = read_ident(line, 1)
            if word == "ext_resource":
                if attrs.get("id") and attrs.get("path"):
                    ext[attrs["id"]] = res_path(attrs["path"], base_dir)
            elif word == "node":
                name = attrs.get("name", "")
                parent = attrs.get("parent")
                if parent is None:
                    node_path = ""
                elif parent in (".", ""):
                    node_path = name
                else:
                    node_path = f"{parent}/{name}"
                current = {
                    "path": node_path,
                    "type": attrs.get("type", ""),
                    "script": "",
                    "unique": False,
                    "instance": ext.get(_resource_ref(attrs.get("instance", "")), ""),
                }
            continue
        if current is None or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip()
        if key == "script":
            target = ext.get(_resource_ref(value), "")
            if target.endswith(".gd"):
                current["script"] = target
        elif key == "unique_name_in_owner":
            current["unique"] = value.strip() == "true"
    close()
    return nodes


def scan_autoloads(text: str) -> dict[str, str]:
    """project.godot ``[autoload]`` entries: name -> project-relative path (never raises)."""
    out: dict[str, str] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section != "autoload" or "=" not in line:
            continue
        key, _, value = line.partition("=")
        s = string_at(value.strip(), 0) or ""
        p = res_path(s.lstrip("*"))
        name = key.strip()
        if p and read_ident(name, 0)[0] == name:
            out[name] = p
    return out


# ---------------------------------------------------------------- the project index


@dataclass(frozen=True)
class TypeInfo:
    """What a project type offers: its members through its project chain, and the engine class it ends in."""

    members: frozenset[str]
    engine_base: str  # "" when the chain ends outside what the project says
    origin: str  # for explanations: "class_name Painter in addons/painter.gd"
    signals: frozenset[str] = frozenset()  # members that are signals: `obj.changed.emit()` is a Signal's
    # Member -> the type key of its value (a var's declared type, a func's return type), when declared.
    value_types: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "members": sorted(self.members),
            "engine_base": self.engine_base,
            "origin": self.origin,
            "signals": sorted(self.signals),
            "value_types": dict(sorted(self.value_types.items())),
        }

    @classmethod
    def from_json(cls, d: dict) -> TypeInfo:
        return cls(
            frozenset(str(m) for m in d.get("members") or ()),
            str(d.get("engine_base", "")),
            str(d.get("origin", "")),
            frozenset(str(m) for m in d.get("signals") or ()),
            {str(k): str(v) for k, v in (d.get("value_types") or {}).items()},
        )


@dataclass(frozen=True)
class NodeRef:
    type_key: str  # engine class name or a project type key
    origin: str  # "main.tscn"


@dataclass(frozen=True)
class FileScope:
    """What one script's names resolve to, as far as the project says.

    Type keys are engine class names or project keys (``script:path`` or
    ``script:path::Inner``) described in ``types``.
    """

    script: str = ""
    self_key: str = ""
    names: dict[str, str] = field(default_factory=dict)  # name in code -> type key (class_names, autoloads, consts)
    member_types: dict[str, str] = field(default_factory=dict)  # member var of self's chain -> type key
    types: dict[str, TypeInfo] = field(default_factory=dict)
    nodes: dict[str, NodeRef] = field(default_factory=dict)  # node path relative to the script's node -> type
    owner: NodeRef | None = None  # the root of the scene that attaches the script (when not the root itself)
    project_names: frozenset[str] = frozenset()  # members the project defines anywhere, that this file mentions

    @property
    def known(self) -> bool:
        return bool(self.self_key)

    def to_json(self) -> str:
        d = {
            "version": PROJECT_INDEX_VERSION,
            "script": self.script,
            "self_key": self.self_key,
            "names": dict(sorted(self.names.items())),
            "member_types": dict(sorted(self.member_types.items())),
            "types": {k: v.to_json() for k, v in sorted(self.types.items())},
            "nodes": {k: [v.type_key, v.origin] for k, v in sorted(self.nodes.items())},
            "owner": [self.owner.type_key, self.owner.origin] if self.owner else None,
            "project_names": sorted(self.project_names),
        }
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> FileScope:
        """The scope in ``text``; an empty scope for "" or anything unreadable (an analysis made before scopes)."""
        try:
            d = json.loads(text) if text else {}
            if not isinstance(d, dict) or d.get("version") != PROJECT_INDEX_VERSION:
                return cls()
            return cls._from_dict(d)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError):
            return cls()  # not a scope this version wrote: judge without one

    @classmethod
    def _from_dict(cls, d: dict) -> FileScope:
        owner = d.get("owner")
        return cls(
            script=str(d.get("script", "")),
            self_key=str(d.get("self_key", "")),
            names={str(k): str(v) for k, v in (d.get("names") or {}).items()},
            member_types={str(k): str(v) for k, v in (d.get("member_types") or {}).items()},
            types={str(k): TypeInfo.from_json(v) for k, v in (d.get("types") or {}).items() if isinstance(v, dict)},
            nodes={
                str(k): NodeRef(str(v[0]), str(v[1]))
                for k, v in (d.get("nodes") or {}).items()
                if isinstance(v, list) and len(v) == 2
            },
            owner=NodeRef(str(owner[0]), str(owner[1])) if isinstance(owner, list) and len(owner) == 2 else None,
            project_names=frozenset(str(n) for n in d.get("project_names") or ()),
        )


def script_key(path: str, inner: str = "") -> str:
    return f"script:{path}" + (f"::{inner}" if inner else "")


@dataclass
class ProjectIndex:
    scripts: dict[str, ScriptSymbols] = field(default_factory=dict)  # project-relative path -> symbols
    scenes: dict[str, list[SceneNode]] = field(default_factory=dict)
    autoloads: dict[str, str] = field(default_factory=dict)
    # Derived lookups, computed on first use (the index is not changed after it is built or read).
    _derived: dict = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------ building

    @classmethod
    def build(cls, files: Iterable[tuple[str, str]]) -> ProjectIndex:
        """From (project-relative path, text) pairs; files of other kinds are ignored."""
        index = cls()
        for path, text in files:
            if not isinstance(text, str):
                continue
            name = posixpath.basename(path)
            if path.endswith(".gd"):
                index.scripts[path] = scan_script(path, text)
            elif path.endswith(".tscn"):
                index.scenes[path] = scan_scene(path, text)
            elif name == "project.godot":
                index.autoloads.update(scan_autoloads(text))
        return index

    def to_json(self) -> str:
        d = {
            "version": PROJECT_INDEX_VERSION,
            "scripts": {k: v.to_json() for k, v in sorted(self.scripts.items())},
            "scenes": {k: [n.to_json() for n in v] for k, v in sorted(self.scenes.items())},
            "autoloads": dict(sorted(self.autoloads.items())),
        }
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ProjectIndex:
        """The index in ``text``; an empty index for "" or anything this version did not write."""
        try:
            d = json.loads(text) if text else {}
            if not isinstance(d, dict) or d.get("version") != PROJECT_INDEX_VERSION:
                return cls()
            return cls._from_dict(d)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError):
            return cls()

    @classmethod
    def _from_dict(cls, d: dict) -> ProjectIndex:
        return cls(
            {str(k): ScriptSymbols.from_json(v) for k, v in (d.get("scripts") or {}).items() if isinstance(v, dict)},
            {
                str(k): [SceneNode.from_json(n) for n in v if isinstance(n, list)]
                for k, v in (d.get("scenes") or {}).items()
                if isinstance(v, list)
            },
            {str(k): str(v) for k, v in (d.get("autoloads") or {}).items()},
        )

    # ------------------------------------------------------------ lookups

    @property
    def class_names(self) -> dict[str, str]:
        if "class_names" not in self._derived:
            out: dict[str, str] = {}
            for path, s in sorted(self.scripts.items()):
                if s.class_name:
                    out.setdefault(s.class_name, path)
            self._derived["class_names"] = out
        return self._derived["class_names"]

    def _class(self, key: str) -> ClassSymbols | None:
        if not key.startswith("script:"):
            return None
        path, _, inner = key[len("script:") :].partition("::")
        cls_: ClassSymbols | None = self.scripts.get(path)
        for part in inner.split("::") if inner else ():
            cls_ = cls_.inner.get(part) if cls_ else None
        return cls_

    def _resolve_ref(self, ref: str, context_key: str = "") -> str:
        """A type reference ("T:Name", "P:path") seen in ``context_key`` -> a type key (engine class name or project key)."""
        kind, _, value = ref.partition(":")
        if not value:
            return ""
        if kind == "P":
            return script_key(value) if value in self.scripts else ""
        if kind == "S":
            return "PackedScene" if value.endswith((".tscn", ".scn")) else ""
        if kind != "T":
            return ""
        head, _, rest = value.partition(".")
        key = ""
        # Inner classes of the context script (and its enclosing classes) first, then class_names, then consts.
        if context_key:
            ctx = context_key
            while ctx and not key:
                c = self._class(ctx)
                if c and head in c.inner:
                    key = f"{ctx}::{head}"
                elif c and c.members.get(head) == "const" and c.member_types.get(head, "").startswith("P:"):
                    key = self._resolve_ref(c.member_types[head])
                ctx = ctx.rpartition("::")[0] if "::" in ctx else ""
        if not key and head in self.class_names:
            key = script_key(self.class_names[head])
        if not key and head in self.autoloads:
            key = self._autoload_key(head)
        if not key:
            return value if not rest else ""  # an engine class (or unknown): the judge checks the vocabulary
        for part in rest.split(".") if rest else ():
            c = self._class(key)
            if c and part in c.inner:
                key = f"{key}::{part}"
            else:
                return ""
        return key

    def autoload_key(self, name: str) -> str:
        """The type key of autoload ``name``: its script's key, or the engine type of its scene's root ("")."""
        return self._autoload_key(name)

    def node_types(self, path: str) -> dict[str, NodeRef]:
        """Node paths relative to the node(s) that attach script ``path`` -> their type, where the scenes agree."""
        return self._nodes_for(path, lambda key, origin="": key)[0]

    def _autoload_key(self, name: str) -> str:
        p = self.autoloads.get(name, "")
        if not p:
            return ""
        if p.endswith(".gd") or p not in self.scenes:
            # A script (or scene) the input lacks, as in a partial upload, is still the project's: a project
            # type the index cannot describe, so its name is never taken for the engine class it may share.
            return script_key(p)
        root = next((n for n in self.scenes[p] if n.path == ""), None)
        if root is None:
            return script_key(p)
        return script_key(root.script) if root.script in self.scripts else root.type

    def chain(self, key: str) -> tuple[list[str], str]:
        """Project keys from ``key`` up its extends chain, and the engine class it ends in ("" when unknown)."""
        keys: list[str] = []
        k = key
        for _ in range(_MAX_CHAIN):
            c = self._class(k)
            if c is None:
                return keys, k if k and not k.startswith("script:") else ""
            keys.append(k)
            if not c.extends:
                # Godot 3: Reference, Godot 4: RefCounted; either way not a Node.
                return keys, "Reference"
            k = self._resolve_ref(c.extends, k)
            if not k or k in keys:
                return keys, ""
        return keys, ""

    def type_info(self, key: str, origin: str) -> TypeInfo | None:
        if not key.startswith("script:"):
            return None
        keys, engine = self.chain(key)
        members: set[str] = set()
        signals: set[str] = set()
        value_types: dict[str, str] = {}
        for k in reversed(keys):  # a script's own declarations override its parents'
            c = self._class(k)
            if c is None:
                continue
            members.update(c.members)
            signals.update(m for m, kind in c.members.items() if kind == "signal")
            for member, ref in [*c.member_types.items(), *c.returns.items()]:
                if ref[:2] in ("T:", "P:"):
                    resolved = self._resolve_ref(ref, k)
                    if resolved:
                        value_types[member] = resolved
        return TypeInfo(frozenset(members), engine, origin, frozenset(signals), value_types)

    def _type_info_cached(self, key: str) -> TypeInfo | None:
        cache = self._derived.setdefault("type_info", {})
        if key not in cache:
            cache[key] = self.type_info(key, self._origin(key))
        return cache[key]

    def _origin(self, key: str) -> str:
        path, _, inner = key[len("script:") :].partition("::")
        cn = self.scripts.get(path, ScriptSymbols()).class_name
        what = f"class_name {cn} in {path}" if cn and not inner else f"script {path}"
        return f"inner class {inner} of {what}" if inner else what

    def all_member_names(self) -> frozenset[str]:
        if "members" in self._derived:
            return self._derived["members"]
        out: set[str] = set()

        def walk(c: ClassSymbols) -> None:
            out.update(c.members)
            for i in c.inner.values():
                walk(i)

        for s in self.scripts.values():
            walk(s)
        self._derived["members"] = frozenset(out)
        return self._derived["members"]

    def scene_node_type(self, scene: str, node_path: str, depth: int = 0) -> str:
        """The engine type of the node at ``node_path`` ("" = the root) of ``scene``, read through instanced and
        inherited scenes (a node an inherited scene only overrides has no type of its own); "" when unknown."""
        by_path = self._derived.setdefault("scene_nodes", {})
        if scene not in by_path:
            by_path[scene] = {n.path: n for n in self.scenes.get(scene, ())}
        nodes = by_path[scene]
        node = nodes.get(node_path)
        if node is not None and node.type:
            return node.type
        if depth >= _MAX_CHAIN:
            return ""
        if node is not None and node.instance:
            return self.scene_node_type(node.instance, "", depth + 1)
        # The deepest ancestor that instances a scene (the root of an inherited scene included) holds the node.
        parts = node_path.split("/") if node_path else []
        for cut in range(len(parts) - 1, -1, -1):
            ancestor = nodes.get("/".join(parts[:cut]))
            if ancestor is not None and ancestor.instance:
                return self.scene_node_type(ancestor.instance, "/".join(parts[cut:]), depth + 1)
        return ""

    def _holders(self) -> dict[str, list[tuple[str, SceneNode]]]:
        """Script path -> (scene, node) pairs of every node that attaches it."""
        if "holders" not in self._derived:
            out: dict[str, list[tuple[str, SceneNode]]] = {}
            for scene, nodes in sorted(self.scenes.items()):
                for n in nodes:
                    if n.script:
                        out.setdefault(n.script, []).append((scene, n))
            self._derived["holders"] = out
        return self._derived["holders"]

    # ------------------------------------------------------------ per-file slice

    def scope_for(self, path: str, text: str | None = None) -> FileScope:
        """The slice of the index that ``path``'s chunks need; restricted to names ``text`` mentions when given."""
        if path not in self.scripts:
            return FileScope()
        mentioned = identifiers(mask_gdscript(text)) if text is not None and len(text) <= _MAX_TEXT else None
        self_key = script_key(path)
        types: dict[str, TypeInfo] = {}

        def add_type(key: str, origin: str = "") -> str:
            if key.startswith("script:") and key not in types:
                info = self._type_info_cached(key)
                if info is not None:
                    if mentioned is not None:
                        # Only what the file can ask about: names it mentions.
                        info = TypeInfo(
                            info.members & mentioned,
                            info.engine_base,
                            info.origin,
                            info.signals & mentioned,
                            {m: t for m, t in info.value_types.items() if m in mentioned},
                        )
                    types[key] = TypeInfo(info.members, info.engine_base, origin or info.origin, info.signals, info.value_types)
            return key

        add_type(self_key)
        names: dict[str, str] = {}
        for cn, p in self.class_names.items():
            if mentioned is None or cn in mentioned:
                names[cn] = add_type(script_key(p))
        for name in self.autoloads:
            if mentioned is None or name in mentioned:
                key = self._autoload_key(name)
                if key:
                    names[name] = add_type(key, f"autoload {name} ({self.autoloads[name]})")
        member_types: dict[str, str] = {}
        keys, _ = self.chain(self_key)
        for k in reversed(keys):  # the script's own declarations override its parents'
            c = self._class(k)
            if c is None:
                continue
            for inner in c.inner:
                names[inner] = add_type(f"{k}::{inner}")
            for member, ref in c.member_types.items():
                if ref.startswith("N:"):
                    member_types[member] = ref
                    continue
                key = self._resolve_ref(ref, k)
                if key:
                    member_types[member] = add_type(key)
                    if ref.startswith(("P:", "S:")) and c.members.get(member) == "const":
                        names[member] = key  # const Painter = preload("painter.gd"): a class
        # The types a visible type's members hold (GdUnitSignals.instance() -> GdUnitSignals): one level.
        for info in list(types.values()):
            for key in info.value_types.values():
                add_type(key)
        nodes, owner = self._nodes_for(path, add_type)
        for member, ref in list(member_types.items()):
            if ref.startswith("N:"):
                node = nodes.get(ref[2:])
                if node:
                    member_types[member] = node.type_key
                else:
                    del member_types[member]
        project_names = self.all_member_names()
        if mentioned is not None:
            project_names = project_names & mentioned
        return FileScope(path, self_key, names, member_types, types, nodes, owner, frozenset(project_names))

    def _node_type(self, node: SceneNode, add_type, depth: int = 0) -> str:
        if node.script and node.script in self.scripts:
            return add_type(script_key(node.script))
        if node.type:
            return node.type
        if node.instance and depth < 8:
            root = next((n for n in self.scenes.get(node.instance, ()) if n.path == ""), None)
            if root is not None:
                return self._node_type(root, add_type, depth + 1)
        return ""

    def _nodes_for(self, path: str, add_type) -> tuple[dict[str, NodeRef], NodeRef | None]:
        """Node paths relative to every node that attaches ``path``; a path two scenes type differently is dropped."""
        found: dict[str, NodeRef] = {}
        conflicting: set[str] = set()
        owners: dict[str, NodeRef] = {}
        for scene, holder in self._holders().get(path, ()):
            nodes = self.scenes[scene]
            prefix = holder.path + "/" if holder.path else ""
            for n in nodes:
                if n is holder or not n.path.startswith(prefix):
                    continue
                t = self._node_type(n, add_type)
                if not t:
                    continue
                for rel in [n.path[len(prefix) :]] + (["%" + n.path.rsplit("/", 1)[-1]] if n.unique else []):
                    ref = NodeRef(t, scene)
                    if rel in found and found[rel].type_key != t:
                        conflicting.add(rel)
                    found.setdefault(rel, ref)
            if holder.path:
                root = next((n for n in nodes if n.path == ""), None)
                t = self._node_type(root, add_type) if root else ""
                if t:
                    owners[t] = NodeRef(t, scene)
        for rel in conflicting:
            found.pop(rel, None)
        owner = next(iter(owners.values())) if len(owners) == 1 else None
        return found, owner


def build_scopes(files: Iterable[tuple[str, str]]) -> tuple[ProjectIndex, dict[str, FileScope]]:
    """The index of a project and the scope of each of its scripts."""
    texts = [(p, t) for p, t in files if isinstance(t, str)]
    index = ProjectIndex.build(texts)
    return index, {p: index.scope_for(p, t) for p, t in texts if p in index.scripts}


@lru_cache(maxsize=64)
def scope_from_json(text: str) -> FileScope | None:
    """A file's scope from its JSON (None for "": no index), parsed once per distinct text.

    Every chunk of a file carries the same text, so the cache turns one parse
    per chunk into one per file.
    """
    return FileScope.from_json(text) if text else None
