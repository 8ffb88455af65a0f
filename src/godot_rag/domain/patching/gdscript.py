"""GDScript 3 -> 4 edits made on the tree-sitter AST.

Every edit is anchored on a syntax node, so a comment or a string literal is
never rewritten: the only strings a rule reads are the signal and method names
of ``connect``/``disconnect``/``is_connected``/``emit_signal`` and the signal of
``yield(obj, "signal")``, whose role the call's shape proves, and they are
turned into code (``sig.connect(_on_x)``), never renamed in place.

Renames (the converter's tables) apply to identifiers in the role their table
names: a class pair to a type or class identifier, a method pair to the name
of a call, a property pair to a member access, an enum or colour pair to a
constant.  Before renaming a member the receiver is resolved
(``symbols.Receiver``) and the project index is asked whether the name is the
project's own; a user-defined member that shares an engine name is kept (and
listed as such).  A rename that depends on a receiver the rules cannot type,
where the old name still exists in Godot 4, becomes a TODO.

Structural rules: ``tool``, ``export``, ``onready``, ``setget``, the RPC
keywords, ``.method()`` super calls, ``func _init().()``, ``yield``, string
connects, ``move_and_slide``/``move_and_slide_with_snap``/``move_and_collide``
arguments, and a few moved members with a receiver check (``instance()``,
``empty()``, ``update()``, ``OS.get_ticks_msec()``, ``parse_json``/``to_json``).
A structural edit that contains smaller edits (renames inside its arguments)
absorbs them: its text is built from its children as already patched, and it
carries the basis of each.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field

from tree_sitter import Node, Parser

from godot_rag.domain.chunking.gdscript import _language
from godot_rag.domain.chunking.tolerant import parse_tolerant
from godot_rag.domain.patching.knowledge import PatchKnowledge, Rename
from godot_rag.domain.patching.model import Basis, Edit, Kept, Todo
from godot_rag.domain.patching.symbols import ENGINE, NODE, SELF, UNKNOWN, USER, ProjectSymbols, Receiver

# The viewport a node is in (`get_viewport()`, `$A/B.get_viewport()`) or the root window
# (`get_tree().root`, `get_tree().get_root()`, `get_node("/root")`, `$"/root"`), without whitespace.
_VIEWPORT_VALUE_RE = re.compile(
    r"(?:(?:self|[A-Za-z_]\w*(?:\(\))?|\$[\w/]+|\$\"[^\"]*\")\.)*get_viewport\(\)"
    r"|get_tree\(\)\.(?:root|get_root\(\))"
    r"|get_node\([\"']/root[\"']\)|\$[\"']/root[\"']"
)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PUNCT = frozenset({"(", ")", ",", "[", "]", "{", "}"})
_STATEMENTS = frozenset({"expression_statement", "variable_statement", "return_statement"})
_VAR_NODES = frozenset({"variable_statement", "export_variable_statement", "onready_variable_statement"})
_KINEMATIC = frozenset({"KinematicBody2D", "KinematicBody"})
_ZERO_VECTORS = frozenset(
    {
        "Vector2.ZERO",
        "Vector2()",
        "Vector2(0, 0)",
        "Vector2(0,0)",
        "Vector3.ZERO",
        "Vector3()",
        "Vector3(0, 0, 0)",
        "Vector3(0,0,0)",
    }
)

# The RPC keywords and their Godot 4 annotation (the converter's mapping).
_RPC = {
    "remote": '@rpc("any_peer")',
    "remotesync": '@rpc("any_peer", "call_local")',
    "sync": '@rpc("any_peer", "call_local")',
    "puppet": "@rpc",
    "slave": "@rpc",
    "puppetsync": '@rpc("call_local")',
    "master": "@rpc",
    "mastersync": '@rpc("call_local")',
}


# Members moved to another name where the rename table's pair is disabled or
# absent; applied only on a receiver that can be the engine class named here
# (the basis cites the migration-guide record).
@dataclass(frozen=True)
class _Move:
    owners: tuple[str, ...]  # Godot 3 classes the member belongs to
    new: str
    record_id: str
    arity: int | None = None  # only calls with this many arguments


_POOL_ARRAYS = (
    "PoolStringArray",
    "PoolIntArray",
    "PoolRealArray",
    "PoolByteArray",
    "PoolVector2Array",
    "PoolVector3Array",
    "PoolColorArray",
)
_METHOD_MOVES = {
    "instance": _Move(("PackedScene",), "instantiate", "change:instance-instantiate", 0),
    # Containers: no script extends them, so a bare empty() / invert() is the script's own method.
    "empty": _Move(("Array", "Dictionary", "String") + _POOL_ARRAYS, "is_empty", "change:array-empty", 0),
    "invert": _Move(("Array",) + _POOL_ARRAYS, "reverse", "change:array-invert", 0),
    "update": _Move(("CanvasItem",), "queue_redraw", "change:update-queue-redraw", 0),
}
# Class-qualified members that moved to another singleton with the same arguments and result.
_QUALIFIED_MOVES = {
    ("OS", "get_ticks_msec"): ("Time.get_ticks_msec", "change:os-time"),
    ("OS", "get_ticks_usec"): ("Time.get_ticks_usec", "change:os-time"),
    ("OS", "get_unix_time"): ("Time.get_unix_time_from_system", "change:os-time"),
    ("OS", "get_system_time_secs"): ("Time.get_unix_time_from_system", "change:os-time"),
}
# Global functions replaced by a call with the same arguments and result.
_GLOBAL_MOVES = {
    "parse_json": ("JSON.parse_string", "change:to-json"),
    "to_json": ("JSON.stringify", "change:to-json"),
}
# Renamed engine virtuals whose contract also changed.
_VIRTUAL_NOTES = {
    "_get_configuration_warning": "Godot 4's _get_configuration_warnings() returns a PackedStringArray (one entry per "
    'warning) instead of a String: return [] / [message] instead of "" / message.',
}
# export(TYPE, HINT...) hints with a Godot 4 annotation of their own.
_EXPORT_HINTS = {
    ("String", "FILE"): "@export_file",
    ("String", "DIR"): "@export_dir",
    ("String", "MULTILINE"): "@export_multiline",
    ("String", "GLOBAL", "FILE"): "@export_global_file",
    ("String", "FILE", "GLOBAL"): "@export_global_file",
    ("String", "GLOBAL", "DIR"): "@export_global_dir",
    ("String", "DIR", "GLOBAL"): "@export_global_dir",
    ("Color", "RGB"): "@export_color_no_alpha",
    ("float", "EASE"): "@export_exp_easing",
    ("int", "LAYERS_2D_PHYSICS"): "@export_flags_2d_physics",
    ("int", "LAYERS_2D_RENDER"): "@export_flags_2d_render",
    ("int", "LAYERS_3D_PHYSICS"): "@export_flags_3d_physics",
    ("int", "LAYERS_3D_RENDER"): "@export_flags_3d_render",
}
# Rules whose proven role lets them turn a string literal into code (signal and method names of
# connect/emit_signal/yield) or reorder its digits (Color("#ARGB")).
_STRING_RULES = frozenset({"connect-callable", "emit-signal", "yield-await", "color-hex-argb"})
# Signals renamed outside the converter's table: name -> (Godot 3 owner, Godot 4 name, record).
_SIGNAL_MOVES = {"idle_frame": ("SceneTree", "process_frame", "change:yield-idle-frame")}
_SIGNAL_METHODS = frozenset({"connect", "disconnect", "is_connected", "emit_signal"})
# Calls whose arguments changed: name -> (Godot 3 owner classes, accepted argument counts, record: a
# "change:" id, or a needle naming the converter example the rule follows).
_ARG_RULES: dict[str, tuple[tuple[str, ...], tuple[int, ...] | None, str]] = {
    "set_cell_item": (("GridMap",), (4, 5), "set_cell_item("),
    "get_cell_item": (("GridMap",), (3,), "get_cell_item("),
    "get_cell_item_orientation": (("GridMap",), (3,), "get_cell_item_orientation("),
    "map_to_world": (("GridMap",), (3,), "map_to_world("),
    "apply_impulse": (("RigidBody2D", "RigidBody", "Physics2DDirectBodyState", "PhysicsDirectBodyState"), (2,), "apply_impulse("),
    "add_force": (("RigidBody2D", "RigidBody", "Physics2DDirectBodyState", "PhysicsDirectBodyState"), (2,), "apply_force("),
    "get_focus_owner": (("Control",), (0,), "get_focus_owner("),
    "create_from_image": (("ImageTexture",), (2,), "create_from_image("),
    "lock": (("Image",), (0,), "image.lock("),
    "unlock": (("Image",), (0,), "image.unlock("),
    "tween_callback": (("SceneTreeTween",), (2, 3), "tween_callback("),
    "tween_method": (("SceneTreeTween",), (5, 6), "tween_method("),
    "join": (("PoolStringArray",), (1,), ".join("),
    "list_dir_begin": (("Directory",), (0, 1, 2), "change:list-dir-begin"),
}
# OS window and screen properties: name -> (Godot 4 expression reading it, statement setting it to {v});
# the converter's own rewrites, which assume a Node script (get_window()).
_OS_WINDOW = {
    "window_resizable": ("(not get_window().unresizable)", "get_window().unresizable = not ({v})"),
    "window_fullscreen": (
        "((get_window().mode == Window.MODE_EXCLUSIVE_FULLSCREEN) or (get_window().mode == Window.MODE_FULLSCREEN))",
        "get_window().mode = Window.MODE_EXCLUSIVE_FULLSCREEN if ({v}) else Window.MODE_WINDOWED",
    ),
    "window_maximized": (
        "(get_window().mode == Window.MODE_MAXIMIZED)",
        "get_window().mode = Window.MODE_MAXIMIZED if ({v}) else Window.MODE_WINDOWED",
    ),
    "window_minimized": (
        "(get_window().mode == Window.MODE_MINIMIZED)",
        "get_window().mode = Window.MODE_MINIMIZED if ({v}) else Window.MODE_WINDOWED",
    ),
    "vsync_enabled": (
        "(DisplayServer.window_get_vsync_mode() != DisplayServer.VSYNC_DISABLED)",
        "DisplayServer.window_set_vsync_mode(DisplayServer.VSYNC_ENABLED if ({v}) else DisplayServer.VSYNC_DISABLED)",
    ),
    "screen_orientation": ("DisplayServer.screen_get_orientation()", "DisplayServer.screen_set_orientation({v})"),
    "window_always_on_top": ("get_window().always_on_top", "get_window().always_on_top = ({v})"),
    "window_borderless": ("get_window().borderless", "get_window().borderless = ({v})"),
}
_OS_GETTERS = {
    "is_window_resizable": "window_resizable",
    "is_window_fullscreen": "window_fullscreen",
    "is_window_maximized": "window_maximized",
    "is_window_minimized": "window_minimized",
    "is_vsync_enabled": "vsync_enabled",
    "get_screen_orientation": "screen_orientation",
    "is_window_always_on_top": "window_always_on_top",
    "get_borderless_window": "window_borderless",
}
_OS_SETTERS = {
    "set_window_resizable": "window_resizable",
    "set_window_fullscreen": "window_fullscreen",
    "set_window_maximized": "window_maximized",
    "set_window_minimized": "window_minimized",
    "set_use_vsync": "vsync_enabled",
    "set_screen_orientation": "screen_orientation",
    "set_window_always_on_top": "window_always_on_top",
    "set_borderless_window": "window_borderless",
}


def replace_note(basis: Basis, note: str) -> Basis:
    return Basis(basis.rule, basis.record_id, basis.confidence, basis.receiver, note)


_NUMBER = re.compile(r"-?\s*\d+(\.\d*)?([eE][-+]?\d+)?\Z")


def _args(node: Node | None) -> list[Node]:
    """The argument expressions; a comment between them is no argument (and add() keeps it from being lost)."""
    if node is None:
        return []
    return [c for c in node.children if c.type not in _PUNCT and c.type not in ("comment", "region_start", "region_end")]


def _initialiser(decl: Node) -> Node | None:
    """The value after `=` or `:=` in a variable declaration."""
    seen = False
    for c in decl.children:
        if seen and c.type not in ("setget", "comment"):
            return c
        if c.type in ("=", "inferred_type"):
            seen = True
    return None


def _child(node: Node, type_: str) -> Node | None:
    for c in node.children:
        if c.type == type_:
            return c
    return None


@dataclass
class _Scope:
    """Names visible in a function body: locals and parameters with their type ("" = untyped)."""

    types: dict[str, str] = field(default_factory=dict)


class GDScriptPatcher:
    def __init__(self, path: str, src: bytes, knowledge: PatchKnowledge, index: ProjectSymbols, parser: Parser | None = None):
        self.path = path
        self.src = src
        self.k = knowledge
        self.index = index
        # Offsets of the tolerant parse are the source's own (chunking/tolerant.py); text is read from src.
        self.tree, _ = parse_tolerant(parser or Parser(_language()), src)
        # Accepted edits by span, in the order they were accepted, and their spans sorted: the edits never
        # overlap, so the few an edit can touch are found by bisection (a file with thousands of edits stays linear).
        self._edits: dict[tuple[int, int], Edit] = {}
        self._spans: list[tuple[int, int]] = []
        self.todos: list[Todo] = []
        self.kept: list[Kept] = []
        self.base = index.engine_base(path)  # Godot 3 engine class the script extends ("" unknown)
        self.declared = index.declared_in(path)
        self.member_types: dict[str, str] = {}
        self._line_starts = [0] + [m.end() for m in re.finditer(rb"\n", src)]
        # Comment and string literal spans: no edit may lose or alter one (see add()).
        self._comments: list[tuple[int, int]] = []
        self._strings: list[tuple[int, int]] = []
        stack = [self.tree.root_node]
        while stack:
            n = stack.pop()
            if n.type in ("comment", "region_start", "region_end"):
                self._comments.append((n.start_byte, n.end_byte))
            elif n.type == "string":
                self._strings.append((n.start_byte, n.end_byte))
            else:
                stack.extend(n.children)
        self._comments.sort()
        self._strings.sort()
        # Lines a rule inserts end like the file's own.
        self.nl = "\r\n" if b"\r\n" in src else "\n"

    # ------------------------------------------------------------ helpers

    def text(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8")

    def line(self, offset: int) -> int:
        lo, hi = 0, len(self._line_starts)
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            if self._line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid
        return lo + 1

    def indent_of(self, node: Node) -> str | None:
        """The whitespace before ``node`` on its line, None when code precedes it there."""
        start = self._line_starts[self.line(node.start_byte) - 1]
        lead = self.src[start : node.start_byte].decode("utf-8")
        return lead if lead.strip() == "" else None

    def todo(self, node: Node | int, rule: str, symbol: str, note: str, record_id: str = "") -> None:
        offset = node if isinstance(node, int) else node.start_byte
        self.todos.append(Todo(self.path, self.line(offset), rule, symbol, note, record_id))

    def keep(self, node: Node, symbol: str, reason: str) -> None:
        self.kept.append(Kept(self.path, self.line(node.start_byte), symbol, reason))

    @property
    def edits(self) -> list[Edit]:
        return list(self._edits.values())

    def _edits_within(self, start: int, end: int) -> list[Edit]:
        """Accepted edits inside [start, end]."""
        return [self._edits[span] for span in self._spans_within(self._spans, start, end)]

    def _edits_touching(self, start: int, end: int) -> list[Edit]:
        """Accepted edits that share at least a point with [start, end] (candidates for add()'s checks)."""
        i = bisect_right(self._spans, (start, end))
        while i > 0 and self._spans[i - 1][1] >= start:
            i -= 1
        out: list[Edit] = []
        while i < len(self._spans) and self._spans[i][0] <= end:
            if self._spans[i][1] >= start:
                out.append(self._edits[self._spans[i]])
            i += 1
        return out

    @staticmethod
    def _spans_within(spans: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for i in range(bisect_left(spans, (start, start)), len(spans)):
            if spans[i][0] > end:
                break
            if spans[i][1] <= end:
                out.append(spans[i])
        return out

    def render(self, start: int, end: int, overrides: tuple[tuple[int, int, str], ...] = ()) -> str:
        """source[start:end] with the accepted edits (and ``overrides``) inside it applied."""
        pieces = [(e.start, e.end, e.replacement) for e in self._edits_within(start, end)]
        pieces = [p for p in pieces if not any(o[0] <= p[0] and p[1] <= o[1] for o in overrides)] + list(overrides)
        out: list[bytes] = []
        pos = start
        for s, e, rep in sorted(pieces):
            out.append(self.src[pos:s])
            out.append(rep.encode("utf-8"))
            pos = e
        out.append(self.src[pos:end])
        return b"".join(out).decode("utf-8")

    def rn(self, node: Node) -> str:
        return self.render(node.start_byte, node.end_byte)

    def add(self, start: int, end: int, replacement: str, basis: Basis, extra: tuple[Basis, ...] = ()) -> bool:
        """Accept an edit (``extra``: more bases of the same change); one containing earlier edits absorbs them
        (their basis included).

        Refused, with a TODO, when it overlaps another edit, when it would drop a comment inside its
        range, or a string literal (except the signal and method names the call-shape rules turn into
        code, and the Color hex digits they reorder), or the text of an edit it absorbs.
        """

        def refuse(why: str) -> bool:
            self.todo(start, basis.rule, basis.note or basis.rule, f"{why}; left for a person", basis.record_id)
            return False

        inner: list[Edit] = []
        for e in self._edits_touching(start, end):
            if start == end == e.start == e.end:
                return refuse("two insertions at the same place")
            if start <= e.start and e.end <= end and (e.start, e.end) != (start, end):
                if e.replacement and e.replacement not in replacement:
                    return refuse(f"would drop the change `{e.replacement[:40]}` inside it")
                inner.append(e)
            elif e.start < end and start < e.end:
                return refuse("overlaps another change on the same code")
        for a, b in self._spans_within(self._comments, start, end):
            if self.src[a:b].decode("utf-8") not in replacement:
                return refuse("a comment inside the change would be lost")
        if basis.rule not in _STRING_RULES:
            for a, b in self._spans_within(self._strings, start, end):
                if self.src[a:b].decode("utf-8") not in replacement:
                    return refuse("a string literal inside the change would be altered")
        for e in inner:
            del self._edits[(e.start, e.end)]
            del self._spans[bisect_left(self._spans, (e.start, e.end))]
        all_basis = (basis,) + tuple(b for e in inner for b in e.basis) + extra
        self._edits[(start, end)] = Edit(start, end, replacement, all_basis)
        insort(self._spans, (start, end))
        return True

    def replace(self, node: Node, replacement: str, basis: Basis) -> bool:
        return self.add(node.start_byte, node.end_byte, replacement, basis)

    @staticmethod
    def string_name(node: Node | None, src: bytes) -> str | None:
        """The identifier a plain string literal holds ("" when it is not one)."""
        if node is None or node.type != "string":
            return None
        raw = src[node.start_byte : node.end_byte].decode("utf-8")
        if len(raw) < 2 or raw[0] not in "\"'" or raw[-1] != raw[0] or raw.startswith(('"""', "'''")):
            return None
        body = raw[1:-1]
        return body if _IDENT.match(body) else None

    # ------------------------------------------------------------ receivers

    def type_of_value(self, value: Node | None) -> str:
        """The type a declaration's initialiser gives (``T.new()``, ``$Node``, ``preload("x.tscn")``), "" when unknown."""
        if value is None:
            return ""
        t = value.type
        if t == "get_node":
            path = self.text(value)[1:]
            return "node:" + path.strip("\"'") if path[:1] not in ("%",) else "node"
        if t == "call":
            fn = self.text(value.children[0])
            args = _args(_child(value, "arguments"))
            if fn in ("get_node", "get_node_or_null") and len(args) == 1 and args[0].type == "string":
                return "node:" + self.text(args[0]).strip("\"'")
            if fn in ("get_node", "get_node_or_null", "get_parent", "find_node", "get_child", "owner"):
                return "node"
            if fn in ("preload", "load") and args and args[0].type == "string":
                raw = self.text(args[0]).strip("\"'")
                return "PackedScene" if raw.endswith((".tscn", ".scn")) else ""
            if fn == "get_tree":
                return "SceneTree"
            if fn == "create_tween":
                return "SceneTreeTween"
            if fn in self.k.vocabulary.classes3 and fn[:1].isupper():
                return fn  # Vector2(...), Color(...)
            return ""
        if t == "attribute":
            kids = value.children
            last = kids[-1]
            if (
                len(kids) == 3
                and kids[0].type == "identifier"
                and last.type == "attribute_call"
                and self.text(last.children[0]) == "new"
            ):
                return self.text(kids[0])
            return ""
        if t == "array":
            return "Array"
        if t == "dictionary":
            return "Dictionary"
        if t == "string":
            return "String"
        return ""

    def declared_type(self, decl: Node) -> str:
        type_node = _child(decl, "type")
        if type_node is not None:
            return self.text(type_node).strip()
        value = _initialiser(decl)
        if decl.type == "export_variable_statement":
            args = _args(_child(decl, "arguments"))
            if args and args[0].type == "identifier":
                return self.text(args[0])
        return self.type_of_value(value)

    def receiver_of_type(self, type_name: str, text: str) -> Receiver:
        """A receiver from a type as ``type_of_value`` / a declaration gives it."""
        if not type_name:
            return Receiver(UNKNOWN, "", text)
        if type_name.startswith("node"):
            # $Path: typed by the scenes that attach this script, when they agree.
            ref = self.index.node_ref(self.path, type_name[5:]) if type_name.startswith("node:") else None
            if ref is None:
                return Receiver(NODE, "", text)
            engine_type, script = ref
            if script:
                return Receiver(USER, self.index.engine_base(script) or engine_type, text, script)
            if engine_type in self.k.vocabulary.classes3:
                return Receiver(ENGINE, engine_type, text)
            return Receiver(NODE, "", text)
        if type_name in self.k.vocabulary.classes3 or type_name in self.k.vocabulary.singletons3:
            return Receiver(ENGINE, type_name, text)
        return self.project_class(type_name, text)

    def project_class(self, name: str, text: str) -> Receiver:
        """A receiver named by a class_name or autoload (or a capitalised name the index does not know)."""
        script = self.index.script_of(name)
        base = self.index.engine_base(script) if script else ""
        return Receiver(USER, base, text, script)

    def resolve(self, node: Node | None, scope: _Scope) -> Receiver:
        """What ``node`` (the expression before a '.') denotes; None = a bare name."""
        if node is None:
            return Receiver(SELF, self.base, "")
        text = self.text(node)
        if node.type == "identifier":
            if text == "self":
                return Receiver(SELF, self.base, "self")
            if text in scope.types:
                return self.receiver_of_type(scope.types[text], text)
            if text in self.member_types:
                return self.receiver_of_type(self.member_types[text], text)
            if text in self.declared:
                return Receiver(UNKNOWN, "", text)
            if self.index.script_of(text):
                return self.project_class(text, text)
            if self.k.is_class3(text):
                return Receiver(ENGINE, text, text)
            return self.project_class(text, text) if text[:1].isupper() else Receiver(UNKNOWN, "", text)
        t = self.type_of_value(node)
        return self.receiver_of_type(t, text) if t else Receiver(UNKNOWN, "", text)

    def member_context(self, node: Node) -> tuple[Node | None, bool]:
        """For a name inside an attribute chain: (the expression before its '.', True); else (None, False)."""
        parent = node.parent
        if parent is not None and parent.type == "attribute_call":
            holder, target = parent.parent, parent
        else:
            holder, target = parent, node
        if holder is None or holder.type != "attribute":
            return None, False
        kids = holder.children
        i = next((j for j, c in enumerate(kids) if c.id == target.id), -1)
        if i <= 0 or kids[i - 1].type != ".":
            return None, False
        if i == 2:
            return kids[0], True
        # a.b.c: the receiver of c is the chain up to the dot before it, which is
        # no single node; only its type matters, and an untyped chain is unknown.
        return kids[i - 2], True

    def receiver_for(self, node: Node, scope: _Scope) -> tuple[Receiver, bool]:
        recv_node, dotted = self.member_context(node)
        if not dotted:
            return self.resolve(None, scope), False
        parent = node.parent
        holder = parent.parent if parent is not None and parent.type == "attribute_call" else parent
        if holder is None:
            return Receiver(UNKNOWN, "", ""), True
        kids = holder.children
        if recv_node is not None and recv_node.id != kids[0].id:
            # a chained receiver: describe it as written, typed only when it is `x.new()` / known call
            text = self.src[holder.start_byte : recv_node.end_byte].decode("utf-8")
            return Receiver(UNKNOWN, "", text), True
        return self.resolve(recv_node, scope), True

    def user_defined(self, name: str, receiver: Receiver, node: Node) -> bool:
        if self.index.defines(name, receiver, self.path):
            self.keep(node, name, f"the project defines `{name}` for {receiver.describe()}")
            return True
        return False

    # ------------------------------------------------------------ the walk

    def run(self) -> list[Edit]:
        root = self.tree.root_node
        for c in root.children:
            if c.type in _VAR_NODES:
                name = _child(c, "name")
                if name is not None:
                    self.member_types[self.text(name)] = self.declared_type(c)
        self.visit(root, _Scope())
        return self.edits

    def visit(self, node: Node, scope: _Scope) -> None:
        t = node.type
        if t in ("function_definition", "constructor_definition", "lambda"):
            scope = _Scope(dict(scope.types))
            for p in _args(_child(node, "parameters")):
                name = p if p.type == "identifier" else (p.children[0] if p.children else None)
                if name is not None and name.type == "identifier":
                    type_node = _child(p, "type")
                    scope.types[self.text(name)] = self.text(type_node) if type_node is not None else ""
        elif t in _VAR_NODES and node.parent is not None and node.parent.type == "body":
            name = _child(node, "name")
            if name is not None:
                scope.types[self.text(name)] = self.declared_type(node)
        elif t == "for_statement" and len(node.children) > 1 and node.children[1].type == "identifier":
            scope.types[self.text(node.children[1])] = ""
        for c in node.children:
            self.visit(c, scope)
        handler = getattr(self, "on_" + t, None)
        if handler is not None:
            handler(node, scope)

    # ------------------------------------------------------------ identifiers: renames

    def on_identifier(self, node: Node, scope: _Scope) -> None:
        parent = node.parent
        if parent is None:
            return
        name = self.text(node)
        if (
            parent.type in ("parameters", "typed_parameter", "default_parameter", "typed_default_parameter")
            and parent.children
            and parent.children[0].id == node.id
        ):
            return
        if parent.type == "for_statement" or parent.type == "enumerator" or parent.type == "annotation":
            return
        if parent.type == "expression_statement" and name == "tool":
            return  # the `tool` statement rule handles it
        if parent.type == "call" and parent.children[0].id == node.id:
            self.rename_call(node, name, None, scope, _args(_child(parent, "arguments")))
            return
        if parent.type == "attribute_call" and parent.children[0].id == node.id:
            self.rename_call(node, name, parent, scope, _args(_child(parent, "arguments")))
            return
        recv_node, dotted = self.member_context(node)
        if dotted:
            self.rename_member(node, name, recv_node, scope)
            return
        self.rename_bare(node, name, scope)

    def rename_bare(self, node: Node, name: str, scope: _Scope) -> None:
        if name in scope.types:
            return
        r = self.k.class_rename(name)
        if r is not None:
            if (
                name in self.declared
                or self.index.defines(name, Receiver(UNKNOWN), self.path)
                or getattr(self.index, "is_project_class", lambda n: False)(name)
            ):
                self.keep(node, name, f"the project declares `{name}`")
                return
            if r.old_in_godot4 and self.types_a_viewport_value(node):
                # Godot 4 keeps `Viewport` as the base of Window and SubViewport, and what `get_viewport()`
                # or the tree's root returns is a Window for most scripts: `SubViewport` would fail there.
                return
            conf = 0.8 if r.old_in_godot4 else 0.95
            self.replace(node, r.new, Basis("rename-class", r.record_id, conf, "type name", f"{name} -> {r.new}"))
            return
        r = self.k.rename("enum_renames", name)
        if r is not None and name.isupper():
            if name in self.declared or self.index.defines(name, Receiver(UNKNOWN), self.path):
                self.keep(node, name, f"the project declares `{name}`")
                return
            self.replace(node, r.new, Basis("rename-enum", r.record_id, 0.95, "global scope", f"{name} -> {r.new}"))
            return
        r = self.k.rename("gdscript_properties_renames", name)
        if r is not None and self.base and self.k.has_member3(self.base, name) and name not in self.declared:
            self.replace(
                node, r.new, Basis("rename-property", r.record_id, 0.9, f"self (extends {self.base})", f"{name} -> {r.new}")
            )

    def types_a_viewport_value(self, node: Node) -> bool:
        """`var v: Viewport = get_viewport()`, `get_tree().root as Viewport`: the type names the viewport a
        node is in or the root window, not a Viewport node of a scene."""
        parent = node.parent
        if parent is None:
            return False
        value: Node | None = None
        if parent.type == "type" and parent.parent is not None and parent.parent.type in _VAR_NODES:
            value = _initialiser(parent.parent)
        elif (
            parent.type == "binary_operator"
            and len(parent.children) == 3
            and parent.children[1].type == "as"
            and parent.children[2].id == node.id
        ):
            value = parent.children[0]
        if value is None:
            return False
        return _VIEWPORT_VALUE_RE.fullmatch("".join(self.text(value).split())) is not None

    def rename_member(self, node: Node, name: str, recv_node: Node | None, scope: _Scope) -> None:
        receiver, _ = self.receiver_for(node, scope)
        if receiver.kind == ENGINE and receiver.text == "Color":
            r = self.k.rename("color_renames", name)
            if r is not None:
                self.replace(
                    node, r.new, Basis("rename-color", r.record_id, 0.95, receiver.describe(), f"Color.{name} -> Color.{r.new}")
                )
            return
        r = self.k.rename("enum_renames", name)
        if r is not None and name.isupper() and receiver.kind == ENGINE:
            self.replace(node, r.new, Basis("rename-enum", r.record_id, 0.9, receiver.describe(), f"{name} -> {r.new}"))
            return
        r = self.k.rename("gdscript_properties_renames", name)
        if r is not None:
            self.rename_engine_member(node, name, r, receiver, "rename-property")

    def rename_engine_member(self, node: Node, name: str, r: Rename, receiver: Receiver, rule: str) -> None:
        if self.user_defined(name, receiver, node):
            return
        if receiver.type_name:
            if not self.k.has_member3(receiver.type_name, name):
                return  # not a member of that class in Godot 3: some other name
            conf = 0.95
        elif receiver.kind == SELF:
            conf = 0.7
        elif r.old_in_godot4:
            self.todo(
                node,
                rule,
                name,
                f"`{name}` is renamed `{r.new}` on {r.context or 'some engine classes'} in Godot 4, "
                f"but `{name}` also exists in Godot 4 and the receiver "
                f"({receiver.describe()}) is not typed: rename it if the receiver is one of those",
                r.record_id,
            )
            return
        else:
            conf = 0.75
        self.replace(node, r.new, Basis(rule, r.record_id, conf, receiver.describe(), f"{name} -> {r.new}"))

    def rename_call(self, node: Node, name: str, call: Node | None, scope: _Scope, args: list[Node]) -> None:
        receiver, dotted = self.receiver_for(node, scope)
        r = self.k.rename("gdscript_function_renames", name)
        if not dotted:
            if name in scope.types:
                return
            if self.k.class_rename(name) is not None:
                self.rename_bare(node, name, scope)  # a constructor: Transform(), PoolStringArray(...)
                return
            if r is not None and name.startswith("_") and self.base and self.k.has_member3(self.base, name):
                # A renamed engine virtual the script overrides: calls follow the declaration.
                self.replace(
                    node, r.new, Basis("rename-virtual", r.record_id, 0.9, f"self (extends {self.base})", f"{name} -> {r.new}")
                )
                return
            if name in _GLOBAL_MOVES and not self.index.defines(name, receiver, self.path) and name in self.k.vocabulary.globals3:
                new, rid = _GLOBAL_MOVES[name]
                self.replace(node, new, Basis("moved-global", rid, 0.95, "global scope", f"{name}() -> {new}()"))
                return
            if r is not None and name in self.k.vocabulary.globals3 and not (self.base and self.k.has_member3(self.base, name)):
                if self.user_defined(name, receiver, node):
                    return
                self.replace(node, r.new, Basis("rename-function", r.record_id, 0.95, "global scope", f"{name} -> {r.new}"))
                return
        if r is not None:
            if name == "add_force" and not receiver.type_name:
                return  # 2D and 3D order its arguments differently: engine_call lists a TODO
            self.rename_engine_member(node, name, r, receiver, "rename-method")
            return
        move = _METHOD_MOVES.get(name)
        if move is not None and (move.arity is None or len(args) == move.arity):
            if self.index.defines(name, receiver, self.path):
                self.keep(node, name, f"the project defines `{name}` for {receiver.describe()}")
                return
            if receiver.type_name:
                if not any(self.k.is_subclass3(receiver.type_name, o) for o in move.owners):
                    return
                conf = 0.95
            elif receiver.kind == SELF:
                return  # a bare call on a script whose base is unknown: not provably the engine's
            elif name == "update":
                # update() is also AESContext/HashingContext/HMACContext.update(), which stays.
                self.todo(
                    node,
                    "moved-method",
                    name,
                    f"`{receiver.text}.update()` is queue_redraw() if `{receiver.text}` is a CanvasItem (receiver not typed)",
                    move.record_id,
                )
                return
            else:
                conf = 0.8
            self.replace(
                node, move.new, Basis("moved-method", move.record_id, conf, receiver.describe(), f"{name}() -> {move.new}()")
            )
            return
        if dotted and receiver.kind == ENGINE and (receiver.text, name) in _QUALIFIED_MOVES:
            new, rid = _QUALIFIED_MOVES[(receiver.text, name)]
            holder = node.parent.parent if node.parent is not None else None  # the attribute
            if holder is None:
                return
            recv = holder.children[0]
            self.add(
                recv.start_byte,
                node.end_byte,
                new,
                Basis("moved-method", rid, 0.95, receiver.describe(), f"{receiver.text}.{name} -> {new}"),
            )

    # ------------------------------------------------------------ declarations

    def on_function_definition(self, node: Node, scope: _Scope) -> None:
        name = _child(node, "name")
        if name is not None:
            n = self.text(name)
            r = self.k.rename("gdscript_function_renames", n)
            if r is not None and n.startswith("_") and self.base and self.k.has_member3(self.base, n):
                self.replace(
                    name,
                    r.new,
                    Basis("rename-virtual", r.record_id, 0.9, f"self (extends {self.base})", f"func {n} -> func {r.new}"),
                )
                if n in _VIRTUAL_NOTES:
                    self.todo(name, "rename-virtual", n, _VIRTUAL_NOTES[n], r.record_id)
        self.rpc_keyword_of(node)
        params = _child(node, "parameters")
        if params is not None:
            self.parameter_var(params)

    def parameter_var(self, params: Node) -> None:
        """``func f(var x)``: Godot 3 skips a ``var`` before a parameter name, Godot 4 rejects it (the tolerant
        parse read it as blank, so it lies between a parameter and the ``(`` or ``,`` before it)."""
        prev_end = params.start_byte
        for child in params.children:
            if child.type in ("(", ",", ")"):
                prev_end = child.end_byte
                continue
            m = re.match(rb"[ \t\r\n\\]*(var[ \t]+)", self.src[prev_end : child.start_byte])
            if m is not None:
                self.add(
                    prev_end + m.start(1),
                    prev_end + m.end(1),
                    "",
                    Basis("parameter-var", "", 0.95, "", f"(var {self.text(child)}) -> ({self.text(child)})"),
                )
            prev_end = child.end_byte

    def rpc_keyword_of(self, member: Node) -> None:
        """The RPC keyword of a function or variable: its ``remote_keyword`` node, or ``sync``/``slave``, which the
        grammar lacks and the tolerant parse read as blank, in the source before the member on its line."""
        kw = _child(member, "remote_keyword")
        if kw is not None:
            self.rpc_keyword(kw.start_byte, kw.end_byte, member.type in _VAR_NODES)
            return
        line_start = self._line_starts[self.line(member.start_byte) - 1]
        m = re.match(rb"[ \t]*(sync|slave)[ \t]+$", self.src[line_start : member.start_byte])
        if m is not None:
            self.rpc_keyword(line_start + m.start(1), line_start + m.end(1), member.type in _VAR_NODES)

    def rpc_keyword(self, start: int, end: int, on_variable: bool) -> None:
        word = self.src[start:end].decode("utf-8").strip()
        annotation = _RPC.get(word)
        if annotation is None:
            return
        if on_variable:
            self.todo(
                start,
                "rpc-keyword",
                word,
                "RPC keywords on variables (rset) are removed in Godot 4: synchronise the "
                "property with a MultiplayerSynchronizer or an @rpc setter function",
                "change:rset-removed",
            )
            return
        self.add(start, end, annotation, Basis("rpc-annotation", "change:rpc-keywords", 0.9, "", f"{word} -> {annotation}"))
        if word in ("master", "mastersync"):
            self.todo(
                start,
                "rpc-annotation",
                word,
                "`master` RPCs are not supported in Godot 4: the function is now callable "
                "by the authority only; check multiplayer.get_remote_sender_id() "
                "if it must run for the server only",
                "change:rpc-keywords",
            )

    def on_expression_statement(self, node: Node, scope: _Scope) -> None:
        kids = node.children
        if (
            len(kids) == 1
            and kids[0].type == "identifier"
            and self.text(kids[0]) == "tool"
            and node.parent is not None
            and node.parent.type == "source"
            and self.indent_of(node) == ""
        ):
            self.replace(node, "@tool", Basis("tool-annotation", "change:tool", 0.99, "", "tool -> @tool"))
            return
        self.move_and_slide(node, scope)

    def on_variable_statement(self, node: Node, scope: _Scope) -> None:
        self.rpc_keyword_of(node)
        if node.parent is not None and node.parent.type == "body":
            self.move_and_slide(node, scope)
        elif node.parent is not None and node.parent.type == "source":
            self.inherited_velocity(node)

    def on_return_statement(self, node: Node, scope: _Scope) -> None:
        self.move_and_slide(node, scope)

    def on_onready_variable_statement(self, node: Node, scope: _Scope) -> None:
        kw = _child(node, "onready")
        if kw is not None:
            self.replace(kw, "@onready", Basis("onready-annotation", "change:onready", 0.99, "", "onready -> @onready"))

    def on_export_variable_statement(self, node: Node, scope: _Scope) -> None:
        kw = _child(node, "export")
        var = _child(node, "var")
        name = _child(node, "name")
        if kw is None or var is None or name is None:
            return
        args = _args(_child(node, "arguments"))
        has_type = (
            _child(node, "type") is not None
            or _child(node, "inferred_type") is not None
            or any(c.type == ":=" for c in node.children)
        )
        annotation, type_text, note = self.export_annotation(args)
        rid = (
            "change:export-keyword"
            if not args
            else "change:export-range"
            if "range" in annotation
            else "change:export-file"
            if "file" in annotation or "dir" in annotation
            else "change:export-enum"
            if "enum" in annotation
            else "change:export-color-no-alpha"
            if "color" in annotation
            else "change:export-flags-layers"
            if "flags" in annotation
            else "change:export-resource"
            if type_text
            else "change:export-keyword"
        )
        # One edit from `export` to the name: the annotation, `@onready` for `export onready var`, and the
        # type the hint gave (absorbing any rename inside the hint, such as Texture -> Texture2D).
        onready = _child(node, "onready")
        text = annotation + " " + ("@onready " if onready is not None else "") + self.render(var.start_byte, name.end_byte)
        if type_text and not has_type:
            text += f": {type_text}"
        self.add(
            kw.start_byte,
            name.end_byte,
            text,
            Basis(
                "export-annotation",
                rid,
                0.95 if not note else 0.8,
                "",
                f"{self.src[kw.start_byte : var.start_byte].decode().strip()} -> {annotation}",
            ),
        )
        if note:
            self.todo(kw, "export-annotation", "export", note, rid)

    def export_annotation(self, args: list[Node]) -> tuple[str, str, str]:
        """(annotation, type to add, TODO note) for export(args)."""
        if not args:
            return "@export", "", ""
        texts = [self.rn(a) for a in args]
        raw = [self.text(a) for a in args]
        first = texts[0]
        if args[0].type != "identifier":
            return "@export", "", f"export hint ({', '.join(raw)}) not carried over: write the Godot 4 annotation by hand"
        rest = raw[1:]
        if not rest:
            if first == "Array":
                return "@export", "Array", ""
            return "@export", first, ""
        words = tuple([raw[0]] + rest)
        if words[:3] in _EXPORT_HINTS or words[:2] in _EXPORT_HINTS:
            key = words[:3] if words[:3] in _EXPORT_HINTS else words[:2]
            extra = rest[len(key) - 1 :]
            ann = _EXPORT_HINTS[key]
            if extra and all(a.type == "string" for a in args[len(key) :]):
                ann += "(" + ", ".join(extra) + ")"
            elif extra:
                return "@export", first, f"export hint ({', '.join(raw)}) not carried over"
            return ann, "" if ann.startswith(("@export_file", "@export_dir", "@export_global", "@export_multiline")) else first, ""
        if raw[0] in ("int", "float") and all(_NUMBER.match(a) for a in rest) and 2 <= len(rest) <= 3:
            return f"@export_range({', '.join(rest)})", first, ""
        if raw[0] in ("int", "String") and all(a.type == "string" for a in args[1:]):
            return f"@export_enum({', '.join(rest)})", first, ""
        if raw[0] == "int" and rest[0] == "FLAGS" and all(a.type == "string" for a in args[2:]) and len(rest) > 1:
            return f"@export_flags({', '.join(rest[1:])})", "int", ""
        if raw[0] == "float" and rest[0] == "EXP" and all(_NUMBER.match(a) for a in rest[1:]) and len(rest) >= 3:
            return f'@export_range({", ".join(rest[1:])}, "exp")', "float", ""
        if raw[0] == "Array" and len(args) == 2 and args[1].type == "identifier":
            return (
                "@export",
                "Array",
                (
                    f"the element type {rest[0]} of export(Array, {rest[0]}) is not carried over: "
                    f"Array[{texts[1]}] would make the array typed"
                ),
            )
        return "@export", first, f"export hint ({', '.join(raw)}) not carried over: write the Godot 4 annotation by hand"

    def on_setget(self, node: Node, scope: _Scope) -> None:
        kw = node.children[0] if node.children else None
        if kw is None or kw.type != "setget":
            return  # already the Godot 4 form
        setter = _child(node, "setter")
        getter = _child(node, "getter")
        parts = []
        if getter is not None:
            parts.append(f"get = {self.text(getter)}")
        if setter is not None:
            parts.append(f"set = {self.text(setter)}")
        if not parts:
            return
        # Replace from the end of the previous token, so `= 100 setget s` becomes `= 100: set = s`.
        prev = node.prev_sibling
        start = prev.end_byte if prev is not None else node.start_byte
        self.add(
            start,
            node.end_byte,
            ": " + ", ".join(parts),
            Basis("setget-property", "change:setget", 0.9, "", f"setget -> {', '.join(parts)}"),
        )
        decl = node.parent
        name = _child(decl, "name") if decl is not None else None
        var = self.text(name) if name is not None else "the property"
        self.todo(
            node,
            "setget-property",
            "setget",
            f"Godot 4 calls the accessors of `{var}` also from inside the class (Godot 3 only through self. or "
            f"from outside): check assignments to `{var}` inside the script, including in its own setter",
            "change:setget",
        )

    # ------------------------------------------------------------ calls

    def on_base_call(self, node: Node, scope: _Scope) -> None:
        self.add(
            node.start_byte,
            node.start_byte,
            "super",
            Basis("super-call", "change:super-call", 0.99, "parent class", ".method() -> super.method()"),
        )
        fn = _child(node, "identifier")
        if fn is not None and self.text(fn) in _SIGNAL_METHODS:
            args = _args(_child(node, "arguments"))
            self.signal_call((fn.start_byte, node.end_byte), self.text(fn), Receiver(SELF, self.base, "super"), args, scope, node)

    def indent_unit(self) -> str:
        m = re.search(rb":[ \t]*(?:#[^\n]*)?\n([ \t]+)\S", self.src)
        return m.group(1).decode() if m and m.group(1).startswith(b" ") else "\t"

    def on_constructor_definition(self, node: Node, scope: _Scope) -> None:
        kids = node.children
        dot = next((c for c in kids if c.type == "."), None)
        if dot is None:
            return
        args = dot.next_sibling
        colon = next((c for c in kids if c.type == ":" and c.start_byte > dot.start_byte), None)
        if args is None or args.type != "arguments" or colon is None:
            return
        body = _child(node, "body")
        first = body.children[0] if body is not None and body.children else None
        head_indent = self.indent_of(node) or ""
        call = "super" + self.rn(args)
        # `func _init(a).(b) -> void:`: the return type stays, the parent call moves into the body.
        between = self.render(args.end_byte, colon.start_byte).strip()
        head = (" " + between if between else "") + ":"
        basis = Basis("super-constructor", "change:super-call", 0.95, "parent class", "_init().(args) -> super(args)")
        if first is not None and self.line(first.start_byte) > self.line(colon.start_byte):
            indent = self.indent_of(first)
            if indent is None:
                return
            self.add(dot.start_byte, colon.end_byte, head, basis)
            self.add(colon.end_byte, colon.end_byte, self.nl + indent + call, basis)
            return
        indent = head_indent + self.indent_unit()
        if first is None:
            self.add(dot.start_byte, colon.end_byte, head + self.nl + indent + call, basis)
        else:
            # A body on the `func` line moves below the parent call.
            self.add(dot.start_byte, first.start_byte, head + self.nl + indent + call + self.nl + indent, basis)

    def on_call(self, node: Node, scope: _Scope) -> None:
        fn = node.children[0] if node.children else None
        if fn is None or fn.type != "identifier":
            return
        name = self.text(fn)
        args = _args(_child(node, "arguments"))
        if name == "yield":
            self.yield_await(node, args, scope)
        elif name in _SIGNAL_METHODS:
            receiver = self.resolve(None, scope)
            self.signal_call((node.start_byte, node.end_byte), name, receiver, args, scope, node)
        elif name == "Color" and len(args) == 1:
            self.color_hex(node, args[0])
        else:
            self.engine_call(node, fn, name, args, None, scope)

    def on_attribute_call(self, node: Node, scope: _Scope) -> None:
        fn = node.children[0] if node.children else None
        if fn is None:
            return
        name = self.text(fn)
        args = _args(_child(node, "arguments"))
        receiver, _ = self.receiver_for(fn, scope)
        if name in _SIGNAL_METHODS:
            self.signal_call((node.start_byte, node.end_byte), name, receiver, args, scope, node)
        else:
            self.engine_call(node, fn, name, args, receiver, scope)

    def engine_call(self, node: Node, fn: Node, name: str, args: list[Node], receiver: Receiver | None, scope: _Scope) -> None:
        """Calls whose arguments changed: move_and_collide, GridMap cells, impulses, focus owner, create_from_image."""
        if name == "move_and_collide":
            self.move_and_collide(node, fn, args, scope)
            return
        if name not in _ARG_RULES:
            return
        receiver = receiver or self.resolve(None, scope)
        owners, arity, record = _ARG_RULES[name]
        if arity is not None and len(args) not in arity:
            return
        if self.index.defines(name, receiver, self.path):
            self.keep(fn, name, f"the project defines `{name}` for {receiver.describe()}")
            return
        if receiver.type_name and not any(self.k.is_subclass3(receiver.type_name, o) for o in owners):
            return
        rid = record if record.startswith("change:") else self.k.example_id(record)
        conf = 0.9 if receiver.type_name else 0.75
        basis = Basis("argument-change", rid, conf, receiver.describe(), "")
        texts = [self.rn(a) for a in args]
        if name in ("set_cell_item", "get_cell_item", "get_cell_item_orientation", "map_to_world"):
            new_name = "map_to_local" if name == "map_to_world" else name
            packed = f"Vector3i({', '.join(texts[:3])})"
            self.replace(
                node,
                f"{new_name}({', '.join([packed] + texts[3:])})",
                replace_note(basis, f"{name}(x, y, z, ...) -> {new_name}(Vector3i(x, y, z), ...)"),
            )
        elif name == "apply_impulse":
            self.replace(
                node,
                f"apply_impulse({texts[1]}, {texts[0]})",
                replace_note(basis, "apply_impulse(position, impulse) -> apply_impulse(impulse, position)"),
            )
        elif name == "add_force":
            r = self.k.rename("gdscript_function_renames", "add_force")
            is2d = receiver.type_name in ("RigidBody2D", "Physics2DDirectBodyState")
            if not is2d and receiver.type_name not in ("RigidBody", "PhysicsDirectBodyState"):
                self.todo(
                    node,
                    "argument-change",
                    name,
                    "add_force is apply_force in Godot 4 with the force first: "
                    "Godot 3's 2D add_force(offset, force) swaps its arguments, the 3D "
                    "add_force(force, position) does not; the receiver's type is not known",
                    r.record_id if r else "",
                )
                return
            order = [texts[1], texts[0]] if is2d else texts
            self.replace(
                node,
                f"apply_force({', '.join(order)})",
                Basis(
                    "argument-change",
                    r.record_id if r else rid,
                    conf,
                    receiver.describe(),
                    "add_force(offset, force) -> apply_force(force, position)" if is2d else "add_force -> apply_force",
                ),
            )
        elif name in ("lock", "unlock"):
            stmt = node.parent
            if stmt is not None and node.type == "attribute_call":
                stmt = stmt.parent
            if receiver.type_name != "Image":
                self.todo(
                    node,
                    "argument-change",
                    name,
                    f"if `{receiver.text}` is an Image, remove this {name}() call "
                    "(Godot 4 images need no locking); Mutex and Semaphore keep "
                    f"{name}()",
                    rid,
                )
            elif stmt is not None and stmt.type == "expression_statement" and len(stmt.children) == 1:
                self.replace(stmt, "pass", replace_note(basis, f"Image.{name}() removed: Godot 4 images need no locking"))
        elif name in ("tween_callback", "tween_method"):
            obj, method = texts[0], texts[1]
            extra = args[2:] if name == "tween_callback" else args[5:]
            binds = ""
            if extra:
                b = extra[0]
                inner = self.render(b.start_byte + 1, b.end_byte - 1).strip() if b.type == "array" else ""
                binds = f".bind({inner})" if b.type == "array" else f".bindv({self.rn(b)})"
            callable_text = f"Callable({obj}, {method}){binds}"
            rest = "" if name == "tween_callback" else ", " + ", ".join(texts[2:5])
            self.replace(
                node,
                f"{name}({callable_text}{rest})",
                replace_note(basis, f"{name}(object, method, ...) -> {name}(Callable(object, method), ...)"),
            )
        elif name == "join":
            if node.type != "attribute_call":
                return
            # Godot 3's String.join(parts) is already Godot 4's form: only a PoolStringArray receiver (typed, or
            # proven by a string-literal delimiter, which String.join cannot take) is rewritten.
            if receiver.type_name != "PoolStringArray" and args[0].type != "string":
                self.todo(
                    node,
                    "argument-change",
                    name,
                    f"if `{receiver.text}` is a PoolStringArray, write `{texts[0]}.join({receiver.text})` (String.join stays)",
                    rid,
                )
                return
            holder = node.parent
            dot = node.prev_sibling
            if holder is None or dot is None or holder.children[-1].id != node.id:
                return
            recv = self.render(holder.start_byte, dot.start_byte)
            self.replace(
                holder, f"{texts[0]}.join({recv})", replace_note(basis, "PoolStringArray.join(delimiter) -> delimiter.join(array)")
            )
        elif name == "list_dir_begin":
            if args:
                self.todo(
                    node,
                    "argument-change",
                    name,
                    "DirAccess.list_dir_begin() takes no arguments in Godot 4: set "
                    "include_navigational / include_hidden on the DirAccess instead "
                    "(they are the opposite of skip_navigational / skip_hidden)",
                    rid,
                )
            else:
                self.todo(
                    node,
                    "argument-change",
                    name,
                    "Godot 3 listed '.' and '..' by default; Godot 4's include_navigational defaults to false",
                    rid,
                )
        elif name == "get_focus_owner":
            self.replace(
                node,
                "get_viewport().gui_get_focus_owner()",
                replace_note(basis, "get_focus_owner() -> get_viewport().gui_get_focus_owner()"),
            )
        elif name == "create_from_image":
            self.todo(
                node,
                "argument-change",
                name,
                "ImageTexture.create_from_image() is static in Godot 4 and returns a "
                "new texture (flags are gone): write `tex = ImageTexture."
                "create_from_image(image)`; calling it on an instance changes nothing",
                rid,
            )

    def color_hex(self, node: Node, arg: Node) -> None:
        """Color("#ARGB") in Godot 3 is Color("#RGBA") in Godot 4: the alpha digits move to the end."""
        if self.index.defines("Color", Receiver(UNKNOWN), self.path) or arg.type != "string":
            return
        raw = self.text(arg)
        m = re.fullmatch(r"([\"'])(#?)([0-9a-fA-F]{4}|[0-9a-fA-F]{8})\1", raw)
        if not m:
            return
        q, hash_, digits = m.groups()
        n = 1 if len(digits) == 4 else 2
        new = f"{q}{hash_}{digits[n:]}{digits[:n]}{q}"
        self.replace(
            arg,
            new,
            Basis(
                "color-hex-argb",
                self.k.example_id('Color("#'),
                0.95,
                "Color constructor",
                f"Color({raw}) ARGB -> Color({new}) RGBA",
            ),
        )

    def on_attribute(self, node: Node, scope: _Scope) -> None:
        kids = node.children
        if len(kids) < 3:
            return
        head, last = kids[0], kids[-1]
        head_text = self.text(head)
        if (
            head.type == "identifier"
            and head_text == "OS"
            and len(kids) == 3
            and not self.index.defines("OS", Receiver(UNKNOWN), self.path)
        ):
            self.os_window(node, last, scope)
            return
        if (
            head.type == "identifier"
            and head_text == "JSON"
            and len(kids) >= 3
            and kids[2].type == "attribute_call"
            and self.text(kids[2].children[0]) == "parse"
        ):
            args = _args(_child(kids[2], "arguments"))
            if len(kids) == 5 and kids[4].type == "identifier" and self.text(kids[4]) == "result" and len(args) == 1:
                self.replace(
                    node,
                    f"JSON.parse_string({self.rn(args[0])})",
                    Basis(
                        "json-parse",
                        "change:json-parse",
                        0.9,
                        "engine type JSON",
                        "JSON.parse(text).result -> JSON.parse_string(text)",
                    ),
                )
            else:
                self.todo(
                    node,
                    "json-parse",
                    "JSON.parse",
                    "JSON.parse(text) returned a JSONParseResult (.result, .error) "
                    "in Godot 3: use JSON.parse_string(text) (null on error) or "
                    "JSON.new().parse(text) and get_data()",
                    "change:json-parse",
                )
            return
        if last.type == "attribute_call" and self.text(last.children[0]) in ("xform", "xform_inv"):
            self.xform(node, last, scope)
            return
        if last.type == "identifier" and self.text(last) == "pressed":
            self.button_pressed(node, last, scope)

    def os_window(self, node: Node, member: Node, scope: _Scope) -> None:
        if member.type == "identifier":
            name = self.text(member)
            m = re.fullmatch(r"SCREEN_ORIENTATION_([A-Z_]+)", name)
            if m:
                self.replace(
                    node,
                    f"DisplayServer.SCREEN_{m.group(1)}",
                    Basis(
                        "os-window",
                        "change:os-window-fullscreen",
                        0.9,
                        "engine singleton OS",
                        f"OS.{name} -> DisplayServer.SCREEN_{m.group(1)}",
                    ),
                )
                return
            if name not in _OS_WINDOW:
                return
            parent = node.parent
            if parent is not None and parent.type == "assignment" and parent.children[0].id == node.id:
                return  # the assignment is rewritten as a whole (on_assignment)
            getter = _OS_WINDOW[name][0]
            self.os_edit(node, getter, f"OS.{name} -> {getter}")
            return
        if member.type != "attribute_call":
            return
        name = self.text(member.children[0])
        args = _args(_child(member, "arguments"))
        if name in _OS_GETTERS and not args:
            getter = _OS_WINDOW[_OS_GETTERS[name]][0]
            self.os_edit(node, getter, f"OS.{name}() -> {getter}")
        elif name in _OS_SETTERS and len(args) == 1:
            setter = _OS_WINDOW[_OS_SETTERS[name]][1]
            text = setter.format(v=self.rn(args[0]))
            if " = " in setter and not (node.parent is not None and node.parent.type == "expression_statement"):
                self.todo(
                    node,
                    "os-window",
                    name,
                    f"OS.{name}() inside an expression: write `{text}` as its own statement",
                    "change:os-window-fullscreen",
                )
                return
            self.os_edit(node, text, f"OS.{name}(v) -> {setter}")

    def os_edit(self, node: Node, text: str, note: str) -> None:
        if "get_window()" in text and self.base and not self.k.has_member3(self.base, "get_tree"):
            self.todo(
                node,
                "os-window",
                "OS",
                f"{note}: get_window() needs a Node, and this script extends {self.base}",
                "change:os-window-fullscreen",
            )
            return
        rid = "change:os-vsync" if "vsync" in text.lower() else "change:os-window-fullscreen"
        self.replace(
            node,
            text,
            Basis(
                "os-window",
                rid,
                0.85 if self.base else 0.75,
                f"self (extends {self.base})" if self.base else "self (base class not resolved)",
                note,
            ),
        )

    def on_assignment(self, node: Node, scope: _Scope) -> None:
        kids = node.children
        if len(kids) != 3 or kids[1].type != "=" or kids[0].type != "attribute":
            return
        left = kids[0].children
        if (
            len(left) == 3
            and self.text(left[0]) == "OS"
            and left[2].type == "identifier"
            and self.text(left[2]) in _OS_WINDOW
            and not self.index.defines("OS", Receiver(UNKNOWN), self.path)
        ):
            name = self.text(left[2])
            setter = _OS_WINDOW[name][1]
            text = setter.format(v=self.rn(kids[2]))
            if node.parent is None or node.parent.type != "expression_statement":
                return
            self.os_edit(node, text, f"OS.{name} = v -> {setter}")

    def xform(self, node: Node, call: Node, scope: _Scope) -> None:
        name = self.text(call.children[0])
        args = _args(_child(call, "arguments"))
        if len(args) != 1:
            return
        dot = call.prev_sibling
        if dot is None:
            return
        receiver, _ = self.receiver_for(call.children[0], scope)
        if self.index.defines(name, receiver, self.path):
            self.keep(call, name, f"the project defines `{name}` for {receiver.describe()}")
            return
        if receiver.type_name and receiver.type_name not in ("Transform", "Transform2D", "Basis", "Quat"):
            return
        recv = self.render(node.start_byte, dot.start_byte)
        arg = self.rn(args[0])
        text = f"{recv} * ({arg})" if name == "xform" else f"({arg}) * {recv}"
        if node.parent is not None and node.parent.type not in (
            "expression_statement",
            "assignment",
            "variable_statement",
            "arguments",
            "return_statement",
            "parenthesized_expression",
        ):
            text = f"({text})"
        self.replace(
            node,
            text,
            Basis(
                "xform-operator",
                self.k.example_id(".xform("),
                0.85,
                receiver.describe(),
                f"{name}(v) -> {'t * v' if name == 'xform' else 'v * t'}",
            ),
        )

    def button_pressed(self, node: Node, member: Node, scope: _Scope) -> None:
        parent = node.parent
        if parent is None or parent.type != "assignment" or parent.children[0].id != node.id:
            return
        receiver, _ = self.receiver_for(member, scope)
        if self.index.defines("pressed", receiver, self.path):
            self.keep(member, "pressed", f"the project defines `pressed` for {receiver.describe()}")
            return
        if receiver.type_name:
            if self.k.has_member3(receiver.type_name, "toggle_mode"):
                self.replace(
                    member,
                    "button_pressed",
                    Basis("button-pressed", "change:button-pressed", 0.9, receiver.describe(), "pressed -> button_pressed"),
                )
            return
        self.todo(
            member,
            "button-pressed",
            "pressed",
            f"if `{receiver.text}` is a Button (BaseButton), `pressed` is "
            f"`button_pressed` in Godot 4; on an InputEvent it stays `pressed`",
            "change:button-pressed",
        )

    def signal_call(
        self, span: tuple[int, int], name: str, receiver: Receiver, args: list[Node], scope: _Scope, node: Node
    ) -> None:
        if self.index.defines(name, receiver, self.path):
            self.keep(node, name, f"the project defines `{name}` for {receiver.describe()}")
            return
        if not args:
            return
        sig = self.string_name(args[0], self.src)
        if name == "emit_signal":
            # Only a signal the receiver provably has: declared by the script or by its engine class.
            if sig is None or not (
                receiver.kind == SELF
                and receiver.text != "super"
                and (sig in self.declared or (receiver.type_name and self.k.has_member3(receiver.type_name, sig)))
            ):
                return
            sig_new, sig_basis = self.signal_rename(sig, receiver, args[0])
            rest = ", ".join(self.rn(a) for a in args[1:])
            self._signal_edit(
                span,
                f"{sig_new}.emit({rest})",
                Basis("emit-signal", "change:emit-signal", 0.95, receiver.describe(), f'emit_signal("{sig}") -> {sig_new}.emit()'),
                (sig_basis,) if sig_basis else (),
            )
            return
        if len(args) < 3 or (name != "connect" and len(args) > 3):
            return  # connect("sig", callable): already the Godot 4 form
        method = self.string_name(args[2], self.src)
        target = args[1]
        target_text = self.rn(target)
        binds = ""
        if name == "connect" and len(args) >= 4:
            b = args[3]
            if b.type == "array":
                inner = self.render(b.start_byte + 1, b.end_byte - 1).strip()
                binds = f".bind({inner})" if inner else ""
            else:
                binds = f".bindv({self.rn(b)})"
        tail = (", " + ", ".join(self.rn(a) for a in args[4:])) if name == "connect" and len(args) >= 5 else ""
        rid = (
            "change:connect-binds" if binds else "change:disconnect-callable" if name == "disconnect" else "change:connect-callable"
        )
        if sig is None or method is None or receiver.text == "super":
            # Names not provable from literals: keep the call, pass a Callable.
            callable_text = f"Callable({target_text}, {self.rn(args[2])}){binds}"
            self._signal_edit(
                span,
                f"{name}({self.rn(args[0])}, {callable_text}{tail})",
                Basis(
                    "connect-callable",
                    rid,
                    0.85,
                    receiver.describe(),
                    f"{name}(signal, target, method) -> {name}(signal, Callable(target, method))",
                ),
                (),
            )
            return
        sig_new, sig_basis = self.signal_rename(sig, receiver, args[0])
        if target.type == "identifier" and target_text == "self":
            target_recv = Receiver(SELF, self.base, "self")
            engine_method = bool(self.base) and self.k.has_member3(self.base, method)
            if self.index.defines(method, target_recv, self.path) or engine_method:
                callable_text = method
            else:
                callable_text = f'Callable(self, "{method}")'
        elif target.type in ("identifier", "get_node", "attribute", "call"):
            callable_text = f"{target_text}.{method}"
        else:
            callable_text = f'Callable({target_text}, "{method}")'
        self._signal_edit(
            span,
            f"{sig_new}.{name}({callable_text}{binds}{tail})",
            Basis(
                "connect-callable",
                rid,
                0.9,
                receiver.describe(),
                f'{name}("{sig}", {self.text(target)}, "{method}") -> {sig_new}.{name}({callable_text}{binds})',
            ),
            (sig_basis,) if sig_basis else (),
        )

    def _signal_edit(self, span: tuple[int, int], text: str, basis: Basis, extra: tuple[Basis, ...]) -> None:
        self.add(span[0], span[1], text, basis, extra)

    def yield_await(self, node: Node, args: list[Node], scope: _Scope) -> None:
        if not args:
            self.todo(
                node,
                "yield-await",
                "yield()",
                "a bare yield() (resumed with .resume()) has no Godot 4 "
                "equivalent: make the caller await a signal or the coroutine",
                "change:yield-coroutine",
            )
            return
        if len(args) != 2:
            return
        sig = self.string_name(args[1], self.src)
        if sig is None:
            self.todo(
                node,
                "yield-await",
                "yield",
                "yield with a signal name that is not a plain string literal: write `await obj.signal` by hand",
                "change:yield-await",
            )
            return
        obj = args[0]
        obj_text = self.rn(obj)
        if (
            sig == "completed"
            and obj.type in ("call", "attribute")
            and obj.children
            and (obj.type == "call" or obj.children[-1].type == "attribute_call")
        ):
            self.replace(
                node,
                f"await {obj_text}",
                Basis("yield-await", "change:yield-coroutine", 0.9, "coroutine call", 'yield(f(), "completed") -> await f()'),
            )
            return
        receiver = self.resolve(obj, scope)
        sig_new, basis = self.signal_rename(sig, receiver, obj)
        wrapped = obj_text if obj.type in ("identifier", "attribute", "call", "get_node") else f"({obj_text})"
        b = Basis("yield-await", "change:yield-await", 0.95, receiver.describe(), f'yield(obj, "{sig}") -> await obj.{sig_new}')
        self.add(node.start_byte, node.end_byte, f"await {wrapped}.{sig_new}", b, (basis,) if basis is not None else ())

    def signal_rename(self, sig: str, receiver: Receiver, node: Node) -> tuple[str, Basis | None]:
        r = self.k.rename("gdscript_signals_renames", sig)
        if r is None and sig in _SIGNAL_MOVES:
            owner, new, rid = _SIGNAL_MOVES[sig]
            if self.index.defines(sig, receiver, self.path) or (
                receiver.type_name and not self.k.is_subclass3(receiver.type_name, owner)
            ):
                return sig, None
            return new, Basis(
                "rename-signal", rid, 0.9 if receiver.type_name else 0.75, receiver.describe(), f"{owner}.{sig} -> {new}"
            )
        if r is None:
            return sig, None
        if self.index.defines(sig, receiver, self.path):
            self.keep(node, sig, f"the project declares signal `{sig}` for {receiver.describe()}")
            return sig, None
        if receiver.type_name and not self.k.has_member3(receiver.type_name, sig):
            return sig, None
        conf = 0.9 if receiver.type_name else 0.7
        return r.new, Basis("rename-signal", r.record_id, conf, receiver.describe(), f"{sig} -> {r.new}")

    # ------------------------------------------------------------ move_and_slide / move_and_collide

    def _kinematic(self, name: str, receiver: Receiver, node: Node) -> bool:
        if self.index.defines(name, receiver, self.path):
            self.keep(node, name, f"the project defines `{name}` for {receiver.describe()}")
            return False
        if receiver.type_name and not self.k.has_member3(receiver.type_name, name):
            return False
        return True

    def move_and_slide(self, stmt: Node, scope: _Scope) -> None:
        found = self._find_slide(stmt)
        if found is None:
            return
        call, fn, name, args, recv_node = found
        receiver = self.resolve(recv_node, scope)
        if not args or not self._kinematic(name, receiver, fn):
            return
        indent = self.indent_of(stmt)
        if indent is None:
            self.todo(
                stmt,
                "move-and-slide",
                name,
                f"{name}() with arguments on a line shared with other code: set the "
                "velocity property and call move_and_slide() by hand",
                "change:move-and-slide",
            )
            return
        prefix = (self.rn(recv_node) + ".") if recv_node is not None else ""
        props = ["velocity", "up_direction", "floor_stop_on_slope", "max_slides", "floor_max_angle", None]
        if name == "move_and_slide_with_snap":
            props = ["velocity", "floor_snap", "up_direction", "floor_stop_on_slope", "max_slides", "floor_max_angle", None]
        lines: list[str] = []
        notes: list[str] = []
        for prop, arg in zip(props, args, strict=False):  # extra arguments: not Godot 3 code
            value = self.rn(arg)
            if prop is None:
                notes.append(f"infinite_inertia ({value}) is removed in Godot 4")
            elif prop == "floor_snap":
                notes.append(
                    f"the snap vector ({value}) became floor_snap_length, a float, in Godot 4: set floor_snap_length by hand"
                )
            elif not (prop == "velocity" and value == f"{prefix}velocity"):
                lines.append(f"{prefix}{prop} = {value}")
        up_given = len(args) > props.index("up_direction")
        if not up_given:
            notes.append(
                "Godot 3 used no up direction here (Vector2.ZERO: no floor, every collision a wall); Godot 4's "
                "default up_direction is UP: set up_direction = Vector2.ZERO to keep Godot 3's behaviour"
            )
        if len(args) <= props.index("floor_stop_on_slope"):
            notes.append("Godot 3's stop_on_slope defaulted to false, Godot 4's floor_stop_on_slope to true")
        lines.append(f"{prefix}move_and_slide()")
        whole = stmt.type == "expression_statement" and stmt.children and stmt.children[0].id == call.id
        if not whole:
            first = stmt.children[0] if stmt.children else None
            is_velocity_assignment = (
                stmt.type == "expression_statement"
                and first is not None
                and first.type == "assignment"
                and first.children
                and self.text(first.children[0]) == f"{prefix}velocity"
                and first.children[-1].id == call.id
            )
            if not is_velocity_assignment:
                lines.append(self.render(stmt.start_byte, stmt.end_byte, ((call.start_byte, call.end_byte, f"{prefix}velocity"),)))
        record = "change:move-and-slide-with-snap" if name == "move_and_slide_with_snap" else "change:move-and-slide"
        ok = self.replace(
            stmt,
            (self.nl + indent).join(lines),
            Basis("move-and-slide", record, 0.9, receiver.describe(), f"{name}(args) -> velocity property + move_and_slide()"),
        )
        if ok:
            for n in notes:
                self.todo(call, "move-and-slide", name, n, record)

    def _find_slide(self, stmt: Node):
        stack = list(stmt.children)
        while stack:
            n = stack.pop()
            if n.type in ("lambda", "body"):
                continue
            if (
                n.type == "call"
                and n.children
                and n.children[0].type == "identifier"
                and self.text(n.children[0]) in ("move_and_slide", "move_and_slide_with_snap")
            ):
                return n, n.children[0], self.text(n.children[0]), _args(_child(n, "arguments")), None
            if n.type == "attribute" and len(n.children) == 3 and n.children[-1].type == "attribute_call":
                ac = n.children[-1]
                nm = self.text(ac.children[0])
                if nm in ("move_and_slide", "move_and_slide_with_snap"):
                    return n, ac.children[0], nm, _args(_child(ac, "arguments")), n.children[0]
            stack.extend(n.children)
        return None

    def move_and_collide(self, node: Node, fn: Node | None, args: list[Node], scope: _Scope) -> None:
        if len(args) < 2:
            return
        receiver, _ = self.receiver_for(fn if fn is not None else node.children[0], scope)
        if not self._kinematic("move_and_collide", receiver, node):
            return
        kept = [self.rn(args[0])]
        dropped = [self.text(a) for a in args[1:3]]
        if len(args) >= 4:
            kept.append(self.rn(args[3]))
        self.replace(
            node,
            f"move_and_collide({', '.join(kept)})",
            Basis(
                "move-and-collide",
                "change:move-and-slide",
                0.85,
                receiver.describe(),
                "move_and_collide(motion, infinite_inertia, exclude_raycast_shapes, test_only) -> "
                "move_and_collide(motion, test_only)",
            ),
        )
        if any(d.strip() not in ("true",) for d in dropped):
            self.todo(
                node,
                "move-and-collide",
                "move_and_collide",
                f"infinite_inertia / exclude_raycast_shapes ({', '.join(dropped)}) are removed in Godot 4",
                "change:move-and-slide",
            )

    def inherited_velocity(self, node: Node) -> None:
        """`var velocity` in a KinematicBody script collides with CharacterBody's own velocity property."""
        name = _child(node, "name")
        if name is None or self.text(name) != "velocity" or self.base not in _KINEMATIC:
            return
        if any(c.type in ("setget", "annotations", "remote_keyword") for c in node.children):
            return
        value = _initialiser(node)
        has_value = any(c.type in ("=", "inferred_type") for c in node.children)
        type_node = _child(node, "type")
        value_text = re.sub(r"\s+", " ", self.text(value)).strip() if value is not None else ""
        type_ok = type_node is None or self.text(type_node) in ("Vector2", "Vector3")
        line_start = self._line_starts[self.line(node.start_byte) - 1]
        line_end = self.src.find(b"\n", node.end_byte)
        line_end = len(self.src) if line_end < 0 else line_end + 1
        rest = self.src[node.end_byte : line_end].strip()
        if type_ok and (not has_value or value_text in _ZERO_VECTORS) and not rest and self.indent_of(node) == "":
            self.add(
                line_start,
                line_end,
                "",
                Basis(
                    "inherited-velocity",
                    "change:move-and-slide",
                    0.9,
                    f"self (extends {self.base})",
                    "remove `var velocity`: CharacterBody's own velocity property (same zero default) replaces it",
                ),
            )
        else:
            self.todo(
                node,
                "inherited-velocity",
                "velocity",
                "the script declares `velocity`, which CharacterBody already has in Godot 4 (a parse error there): "
                "remove the declaration and set the initial value in _ready()",
                "change:move-and-slide",
            )


def patch_gdscript(
    path: str, source: str, knowledge: PatchKnowledge, index: ProjectSymbols, parser: Parser | None = None
) -> tuple[list[Edit], list[Todo], list[Kept], bool]:
    """Edits, TODOs and kept names for one .gd file; the bool says whether it parsed without errors."""
    p = GDScriptPatcher(path, source.encode("utf-8"), knowledge, index, parser)
    clean = not p.tree.root_node.has_error
    if not clean:
        p.todo(0, "parse", path, "the file does not parse cleanly with tree-sitter: no change is made to it")
        return [], p.todos, [], False
    edits = p.run()
    return edits, p.todos, p.kept, True
