"""The offline rules judge: deterministic judgments from code facts and evidence.

Every fact is matched against the chunk's code mask (comments and string
bodies blanked), so text inside comments or strings -- including instructions
aimed at a model -- never changes a rules judgment.

Facts come from four places:

- syntax that only one version parses (``yield(``, ``export var``, ``setget``,
  three-argument ``connect``; annotations, ``await``, lambdas, ``super``, typed
  arrays, ``&""``/``^""`` literals, ``.emit()``, Callable connects...);
- the converter's rename pairs (api_mapping records: the whole table through
  ``RenameIndex``, plus any retrieved api_mapping hit), matched as exact
  identifiers in code, never a disabled pair on its own;
- the two class references (``EngineVocabulary``): classes, singleton members
  and global functions that exist in one version only. This is what makes
  Godot 3.5 backports (``create_tween``, ``Time``, ``rng.randf_range``) neutral:
  they are in the 3.6 reference, so they are no evidence of either version;
- the project's own declarations: a call of a method the file declares, or a
  member of a capitalised name that is no engine class (an autoload such as
  ``SceneManager.change_scene``), is the project's API, not the engine's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Iterable, Sequence

from godot_rag.domain.models import (
    SIGNAL_GODOT3,
    SIGNAL_GODOT4,
    SIGNAL_NEUTRAL,
    Chunk,
    EvidenceUse,
    Judgment,
    MigrationNote,
    RetrievalHit,
)

RULES_JUDGE_VERSION = "rules/4"

# What a fact rests on. The verdict weighs them differently
# (docs/judge.md, "Verdict rules"):
KIND_CONFIG = "config"  # project.godot's config_version / features: the project's own version
KIND_SYNTAX = "syntax"  # grammar only one version's GDScript parser accepts
# A type one version's class reference lacks: a scene node or resource of a
# removed (or renamed) Godot 3 class, a Godot 4-only one, a script's base class.
KIND_REMOVED_TYPE = "removed_type"
KIND_API = "api"  # engine names: members, classes used in code, renamed properties and settings
# How the editor wrote the file (format=2, numeric resource ids, ExtResource( 1 ),
# the import cache): Godot 4 loads Godot 3's and rewrites it on the next save.
KIND_FILE_FORMAT = "file_format"
EVIDENCE_KINDS = (KIND_CONFIG, KIND_SYNTAX, KIND_REMOVED_TYPE, KIND_API, KIND_FILE_FORMAT)
# Which kind wins inside one chunk when both versions have facts: grammar and
# types decide whether a version can load the code at all, names come next,
# the file format least (it says which editor saved the file, not what it holds).
_KIND_RANK = {KIND_CONFIG: 3, KIND_SYNTAX: 3, KIND_REMOVED_TYPE: 3, KIND_API: 2, KIND_FILE_FORMAT: 1}

# Confidence of a neutral judgment: a chunk that touches no engine name at all
# (a const, an enum, arithmetic on its own fields) is safely neutral; one that
# calls engine APIs the rules found nothing wrong with is only probably so.
NEUTRAL_NO_ENGINE_SURFACE = 0.9
NEUTRAL_WITH_ENGINE_SURFACE = 0.6
MAX_EXPLANATION = 1200


@dataclass(frozen=True)
class Fact:
    signal: str  # godot3 | godot4
    strength: float  # 0..1: how sure this fact alone is
    what: str
    line: int  # 1-based file line
    old: str = ""
    new: str = ""
    basis_record_id: str = ""
    symbol: str = ""  # the matched identifier, for de-duplication across rules
    kind: str = KIND_API  # one of EVIDENCE_KINDS


@dataclass(frozen=True)
class RenameEntry:
    record_id: str
    old: str
    new: str
    change_type: str
    enabled: bool
    old_in_godot4: bool
    new_in_godot3: bool


# ---------------------------------------------------------------- engine vocabulary


@dataclass(frozen=True)
class EngineVocabulary:
    """What each version's class reference names: classes, members per class, globals."""

    classes3: frozenset[str]
    classes4: frozenset[str]
    # Members per class, inherited members included.
    members3: dict[str, frozenset[str]]
    members4: dict[str, frozenset[str]]
    # Every member name of any class (methods, properties, signals, constants, enums).
    member_names3: frozenset[str]
    member_names4: frozenset[str]
    globals3: frozenset[str]  # @GlobalScope / @GDScript functions
    globals4: frozenset[str]
    constants3: frozenset[str]  # @GlobalScope constants (KEY_*, BUTTON_*, ...)
    constants4: frozenset[str]
    singletons3: frozenset[str]
    singletons4: frozenset[str]

    @classmethod
    def from_class_references(cls, rows3: Iterable[dict], rows4: Iterable[dict]) -> "EngineVocabulary":
        v3 = _version_vocabulary(rows3)
        v4 = _version_vocabulary(rows4)
        return cls(
            classes3=v3["classes"], classes4=v4["classes"], members3=v3["members"], members4=v4["members"],
            member_names3=v3["member_names"], member_names4=v4["member_names"], globals3=v3["globals"],
            globals4=v4["globals"], constants3=v3["constants"], constants4=v4["constants"],
            singletons3=v3["singletons"], singletons4=v4["singletons"],
        )

    @classmethod
    def empty(cls) -> "EngineVocabulary":
        e: frozenset[str] = frozenset()
        return cls(e, e, {}, {}, e, e, e, e, e, e, e, e)

    def is_engine_class(self, name: str) -> bool:
        return name in self.classes3 or name in self.classes4 or name in self.singletons3 or name in self.singletons4

    def engine_name(self, name: str) -> bool:
        return (name in self.member_names3 or name in self.member_names4 or name in self.globals3 or name in self.globals4
                or self.is_engine_class(name) or name in self.constants3 or name in self.constants4)


def _version_vocabulary(rows: Iterable[dict]) -> dict:
    own: dict[str, set[str]] = {}
    parent: dict[str, str] = {}
    globals_: set[str] = set()
    constants: set[str] = set()
    singletons: set[str] = set()
    for r in rows:
        klass, kind, name = r["class"], r.get("kind"), r.get("name") or ""
        if kind == "class":
            own.setdefault(klass, set())
            if r.get("inherits"):
                parent[klass] = r["inherits"]
            continue
        if klass in ("@GlobalScope", "@GDScript"):
            if kind == "method":
                globals_.add(name)
            elif kind == "constant":
                constants.add(name)
            elif kind == "property":
                singletons.add(name)
            continue
        own.setdefault(klass, set()).add(name)
    members: dict[str, frozenset[str]] = {}
    for klass in own:
        acc: set[str] = set()
        seen: set[str] = set()
        k: str | None = klass
        while k and k not in seen:
            seen.add(k)
            acc |= own.get(k, set())
            k = parent.get(k)
        members[klass] = frozenset(acc)
    classes = frozenset(k for k in own if not k.startswith("@"))
    member_names = frozenset(n for names in own.values() for n in names)
    return {"classes": classes, "members": members, "member_names": member_names, "globals": frozenset(globals_),
            "constants": frozenset(constants), "singletons": frozenset(singletons)}


@lru_cache(maxsize=1)
def shipped_vocabulary() -> EngineVocabulary:
    """The vocabulary of the class references shipped in kb_data (read once per process)."""
    from godot_rag.domain.retrieval.knowledge import read_jsonl_gz

    return EngineVocabulary.from_class_references(
        read_jsonl_gz("godot3_class_reference.jsonl.gz"), read_jsonl_gz("godot4_class_reference.jsonl.gz")
    )


@dataclass
class RenameIndex:
    """Enabled GDScript-side rename pairs by old and by new name, plus the engine vocabulary."""

    by_old: dict[str, list[RenameEntry]] = field(default_factory=dict)
    by_new: dict[str, list[RenameEntry]] = field(default_factory=dict)
    vocabulary: EngineVocabulary = field(default_factory=EngineVocabulary.empty)

    @classmethod
    def from_payloads(cls, rows: Iterable[tuple[str, dict]], vocabulary: EngineVocabulary | None = None) -> "RenameIndex":
        index = cls(vocabulary=vocabulary or EngineVocabulary.empty())
        for record_id, p in rows:
            entry = _entry(record_id, p)
            if entry is None:
                continue
            index.by_old.setdefault(entry.old, []).append(entry)
            index.by_new.setdefault(entry.new, []).append(entry)
        return index

    @property
    def record_ids(self) -> frozenset[str]:
        return frozenset(e.record_id for entries in self.by_old.values() for e in entries)


def _entry(record_id: str, p: dict) -> RenameEntry | None:
    if p.get("language") == "csharp" or not p.get("old_symbol"):
        return None
    return RenameEntry(
        record_id, p["old_symbol"], p.get("new_symbol", ""), p.get("change_type", ""), bool(p.get("enabled", True)),
        bool(p.get("old_in_godot4", False)), bool(p.get("new_in_godot3", False)),
    )


def declared_names(chunks: Sequence[Chunk]) -> frozenset[str]:
    """Names a file declares itself (functions; variables, constants, signals)."""
    return declared_names_of((c.chunk_kind, c.name, c.code_text) for c in chunks)


def declared_names_of(chunks: Iterable[tuple[str, str, str]]) -> frozenset[str]:
    """The same from (chunk_kind, name, code_text) rows, as the store keeps them."""
    names: set[str] = set()
    for kind, name, text in chunks:
        if kind == "function" and name:
            names.add(name)
        elif kind in ("variable", "const", "signal"):
            names.update(_DECLARED_RE.findall(text))
    return frozenset(names)


_DECLARED_RE = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:export(?:\([^)]*\))?\s+|onready\s+|static\s+)*(?:var|const|signal)\s+([A-Za-z_]\w*)", re.M
)

# ---------------------------------------------------------------- GDScript facts

_G3_SYNTAX: list[tuple[re.Pattern[str], str, float, str, str]] = [
    (re.compile(r"^[ \t]*tool[ \t]*$", re.M), "bare `tool` keyword (Godot 4 writes @tool)", 0.95, "tool", "@tool"),
    (re.compile(r"^[ \t]*export\b[ \t]*(\(|var\b|onready\b)", re.M), "`export` keyword (Godot 4 uses @export annotations)", 0.95, "export", "@export"),
    (re.compile(r"^[ \t]*(export[ \t]*(\([^)\n]*\))?[ \t]+)?onready[ \t]+var\b", re.M), "`onready` keyword (Godot 4 uses @onready)", 0.95, "onready", "@onready"),
    (re.compile(r"\bsetget\b"), "`setget` (Godot 4 uses set/get property syntax)", 0.95, "setget", "set/get"),
    (re.compile(r"(?<![\w.])yield[ \t]*\("), "`yield()` (Godot 4 uses await)", 0.95, "yield(", "await"),
    (re.compile(r"\.instance[ \t]*\([ \t]*\)"), "`PackedScene.instance()` (instantiate() in Godot 4)", 0.85, "instance()", "instantiate()"),
    (re.compile(r"^[ \t]*(remote|master|puppet|remotesync|mastersync|puppetsync|slave|sync)[ \t]+(func|var)\b", re.M),
     "RPC keyword on a member (Godot 4 uses @rpc)", 0.95, "remote func", "@rpc func"),
    (re.compile(r"^[ \t]*func[ \t]+_init\([^)]*\)[ \t]*\.[ \t]*\(", re.M), "`_init().(...)` parent constructor call", 0.95, "_init().()", "super()"),
    (re.compile(r"(?<![\w.])move_and_slide_with_snap[ \t]*\("), "`move_and_slide_with_snap()` (Godot 4 sets floor_snap_length)", 0.9,
     "move_and_slide_with_snap()", "move_and_slide()"),
]

_G4_SYNTAX: list[tuple[re.Pattern[str], str, float]] = [
    (re.compile(r"(?:^|[ \t;])@(export\w*|onready|tool|icon|rpc|warning_ignore\w*|static_unload|abstract)\b", re.M),
     "annotation (Godot 4 only)", 0.95),
    (re.compile(r"(?<![\w.])await\b"), "`await` (Godot 4 only)", 0.95),
    (re.compile(r"(?<![\w.])super[ \t]*[.(]"), "`super` call (Godot 4 only)", 0.9),
    (re.compile(r"(?:[=(,:\[]|return)[ \t]*func\b[^\n]*\)[ \t]*(->[ \t]*\w+[ \t]*)?:"), "lambda (Godot 4 only)", 0.9),
    (re.compile(r"\bArray\[[ \t]*[A-Za-z_]\w*[ \t]*\]"), "typed array (Godot 4 only)", 0.9),
    (re.compile(r"\bDictionary\[[ \t]*[A-Za-z_]\w*[ \t]*,"), "typed dictionary (Godot 4.4+)", 0.9),
    (re.compile(r"\.emit[ \t]*\("), "`signal.emit()` (Godot 4 only)", 0.85),
    (re.compile(r"^[ \t]+set[ \t]*\([ \t]*\w+[ \t]*\)[ \t]*:|^[ \t]+get[ \t]*:", re.M), "set/get property syntax (Godot 4 only)", 0.9),
    (re.compile(r"\.instantiate[ \t]*\("), "`instantiate()` (Godot 4 name)", 0.85),
    (re.compile(r"^[ \t]*static[ \t]+var\b", re.M), "`static var` (Godot 4.1+)", 0.9),
    (re.compile(r"\bfor[ \t]+\w+[ \t]*:[ \t]*\w+[ \t]+in\b"), "typed loop variable (Godot 4.2+)", 0.9),
    (re.compile(r"\bis[ \t]+not\b"), "`is not` operator (Godot 4 only)", 0.85),
]

# The syntax-table entries that are really a name (a call another version names
# differently), not grammar: they are API evidence, and a project method of
# that name is the project's own.
_NAME_LIKE_SYNTAX = ("`PackedScene.instance()`", "move_and_slide_with_snap", "`signal.emit()`", "`instantiate()`")
_LITERAL_WHATS = ("StringName literal &\"...\" (Godot 4 only)", "NodePath literal ^\"...\" (Godot 4 only)")
_SYNTAX_WHATS = frozenset(
    [entry[1] for entry in (*_G3_SYNTAX, *_G4_SYNTAX) if not any(n in entry[1] for n in _NAME_LIKE_SYNTAX)]
    + list(_LITERAL_WHATS)
)

# Literal prefixes live in code, the string after them is masked: check code_text
# at positions where the mask shows code.
_G4_LITERALS = re.compile(r"(?<![\w\"'])([&^])[\"']")

# Replacements for version-only names the rename table does not pair (removed
# and moved APIs); a note is only written when the new form is known.
_G3_REPLACEMENTS = {
    "File": "FileAccess",
    "Directory": "DirAccess",
    "FuncRef": "Callable",
    "funcref": "Callable(object, method)",
    "JSONParseResult": "JSON",
    "parse_json": "JSON.parse_string",
    "to_json": "JSON.stringify",
    "Quat": "Quaternion",
    "Transform": "Transform3D",
    "PoolStringArray": "PackedStringArray",
    "PoolIntArray": "PackedInt32Array",
    "PoolRealArray": "PackedFloat32Array",
    "PoolByteArray": "PackedByteArray",
    "PoolVector2Array": "PackedVector2Array",
    "PoolVector3Array": "PackedVector3Array",
    "PoolColorArray": "PackedColorArray",
    "SceneTreeTween": "Tween",
    "OS.get_ticks_msec": "Time.get_ticks_msec",
    "OS.get_ticks_usec": "Time.get_ticks_usec",
    "OS.get_unix_time": "Time.get_unix_time_from_system",
    "OS.get_datetime": "Time.get_datetime_dict_from_system",
    "OS.get_system_time_secs": "Time.get_unix_time_from_system",
    "OS.window_fullscreen": "DisplayServer.window_set_mode",
    "OS.window_size": "DisplayServer.window_get_size / window_set_size",
    "OS.set_window_title": "DisplayServer.window_set_title",
    "Engine.editor_hint": "Engine.is_editor_hint()",
    "JSON.print": "JSON.stringify",
    "interpolate_property": "create_tween().tween_property",
    "get_network_master": "get_multiplayer_authority",
    "rset": "@rpc var sync (MultiplayerSynchronizer)",
    "empty": "is_empty",
}

_KEYWORDS = frozenset(
    "if elif else for while match break continue pass return class class_name extends is in as self tool signal func "
    "static const enum var onready export setget breakpoint preload yield await assert remote master puppet remotesync "
    "mastersync puppetsync true false null not and or PI TAU INF NAN void super get set when".split()
)
_DECL_WORDS = frozenset({"func", "var", "const", "signal", "class", "enum", "class_name"})
_IDENT_RE = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*")
_NODE_PATH_RE = re.compile(r"\$[A-Za-z_][\w/]*|(?<![\w)\]\s])%[A-Za-z_][\w/]*")


def _line_of(chunk: Chunk, offset: int) -> int:
    return chunk.span.start_line + chunk.code_text.count("\n", 0, offset)


def _in_code(chunk: Chunk, offset: int) -> bool:
    mask = chunk.code_mask or chunk.code_text
    return offset < len(mask) and mask[offset] == chunk.code_text[offset] and not mask[offset].isspace()


@dataclass(frozen=True)
class _Token:
    word: str
    start: int
    end: int
    prev_char: str  # first non-blank character before the token ("" at start)
    next_char: str  # first non-blank character after it
    prev_word: str  # the word before it on the same statement
    receiver: str  # for `a.b`: "a" when it is a plain name, ")" / "]" for expressions, "" when no dot


def _tokens(mask: str) -> list[_Token]:
    node_path_spans = [(m.start(), m.end()) for m in _NODE_PATH_RE.finditer(mask)]
    out: list[_Token] = []
    for m in _IDENT_RE.finditer(mask):
        start, end = m.start(), m.end()
        if any(a <= start < b for a, b in node_path_spans):
            continue  # $Node/Path and %Unique names are the project's nodes
        if start > 0 and mask[start - 1] == "@":
            continue  # annotation name
        # A bounded look-back keeps this linear in the chunk size.
        before = mask[max(0, start - 160):start].rstrip(" \t")
        prev_char = before[-1:] if before else ""
        after = mask[end:].lstrip(" \t")
        next_char = after[:1]
        pw = re.search(r"([A-Za-z_]\w*)[ \t]*$", before)
        prev_word = pw.group(1) if pw else ""
        receiver = ""
        if prev_char == ".":
            rm = re.search(r"([A-Za-z_]\w*|[)\]])[ \t]*\.$", before)
            receiver = rm.group(1) if rm else "?"
            if rm and re.search(r"[$%][\w/]*$", before[: rm.start(1) + len(rm.group(1))]) and receiver not in (")", "]"):
                receiver = "$node"
        out.append(_Token(m.group(0), start, end, prev_char, next_char, prev_word, receiver))
    return out


def _call_args(mask: str, open_paren: int) -> list[str] | None:
    """Top-level arguments of the call whose '(' is at ``open_paren`` (None when unbalanced)."""
    depth = 0
    args: list[str] = []
    cur = open_paren + 1
    for i in range(open_paren, len(mask)):
        ch = mask[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                tail = mask[cur:i].strip()
                if tail or args:
                    args.append(tail)
                return args
        elif ch == "," and depth == 1:
            args.append(mask[cur:i].strip())
            cur = i + 1
    return None


def _is_string(arg: str) -> bool:
    return len(arg) >= 2 and arg[0] in "\"'" and arg[-1] == arg[0]


def gdscript_facts(
    chunk: Chunk,
    index: RenameIndex,
    declared_names: frozenset[str],
    hits: Sequence[RetrievalHit] = (),
) -> list[Fact]:
    mask = chunk.code_mask or chunk.code_text
    facts: list[Fact] = []
    for pattern, what, strength, old, new in _G3_SYNTAX:
        for m in pattern.finditer(mask):
            facts.append(Fact(SIGNAL_GODOT3, strength, what, _line_of(chunk, m.start()), old, new))
    for pattern, what, strength in _G4_SYNTAX:
        for m in pattern.finditer(mask):
            facts.append(Fact(SIGNAL_GODOT4, strength, what, _line_of(chunk, m.start())))
    for m in _G4_LITERALS.finditer(chunk.code_text):
        if _in_code(chunk, m.start()):
            kind = "StringName" if m.group(1) == "&" else "NodePath"
            facts.append(Fact(SIGNAL_GODOT4, 0.9, f"{kind} literal {m.group(1)}\"...\" (Godot 4 only)", _line_of(chunk, m.start())))
    tokens = _tokens(mask)
    facts.extend(_call_shape_facts(chunk, mask, tokens, declared_names))
    rename = _rename_facts(chunk, tokens, index, declared_names, hits)
    facts.extend(rename)
    renamed_at = {(f.line, f.symbol) for f in rename}
    facts.extend(f for f in _vocabulary_facts(chunk, tokens, index, declared_names) if (f.line, f.symbol) not in renamed_at)
    retrieved = {h.record_id for h in hits if h.table_name == "api_mapping"}
    return [_with_syntax_basis(f, retrieved) for f in facts]


# The api_mapping record (authored from the migration guide, kb_data/api_mapping_extra.jsonl)
# that each syntax fact rests on, so its migration note names a basis record when
# retrieval found that record for the chunk.
_SYNTAX_BASIS = {
    "tool": "change:tool",
    "export": "change:export-keyword",
    "onready": "change:onready",
    "setget": "change:setget",
    "yield(": "change:yield-await",
    "instance()": "change:instance-instantiate",
    "remote func": "change:rpc-keywords",
    "_init().()": "change:super-call",
    "move_and_slide_with_snap()": "change:move-and-slide-with-snap",
    "move_and_slide(velocity)": "change:move-and-slide",
    "connect(\"signal\", obj, \"method\")": "change:connect-callable",
    "disconnect(\"signal\", obj, \"method\")": "change:disconnect-callable",
}


def _with_syntax_basis(fact: Fact, retrieved: set[str]) -> Fact:
    # Only a record the retriever returned may be cited (the judgment contract).
    if fact.signal != SIGNAL_GODOT3 or fact.basis_record_id or _SYNTAX_BASIS.get(fact.old) not in retrieved:
        return fact
    return replace(fact, basis_record_id=_SYNTAX_BASIS[fact.old])


def _call_shape_facts(chunk: Chunk, mask: str, tokens: list[_Token], declared: frozenset[str]) -> list[Fact]:
    """Facts that depend on a call's arguments, not only its name."""
    facts: list[Fact] = []
    for t in tokens:
        if t.next_char != "(" or t.prev_word in _DECL_WORDS:
            continue
        own = t.word in declared and t.receiver in ("", "self")
        paren = mask.index("(", t.end)
        args = _call_args(mask, paren)
        if args is None:
            continue
        line = _line_of(chunk, t.start)
        if t.word in ("connect", "disconnect", "is_connected") and not own:
            if len(args) >= 3 and _is_string(args[2]):
                facts.append(Fact(SIGNAL_GODOT3, 0.9, f"{t.word}(signal, target, \"method\") (Godot 4 takes a Callable)", line,
                                  f"{t.word}(\"signal\", obj, \"method\")", f"signal.{t.word}(callable)", symbol=t.word))
            elif t.word == "connect" and t.receiver not in ("", "self") and 1 <= len(args) <= 2 and not _is_string(args[0]) \
                    and args[0] not in ("self",) and re.fullmatch(r"[A-Za-z_][\w.]*|func\b.*|Callable\(.*", args[0]):
                facts.append(Fact(SIGNAL_GODOT4, 0.8, "Callable signal connect (Godot 4 only)", line, symbol=t.word))
            elif len(args) == 2 and _is_string(args[0]) and not _is_string(args[1]) and args[1] != "self":
                facts.append(Fact(SIGNAL_GODOT4, 0.8, f"{t.word}(\"signal\", callable) (Godot 4 only)", line, symbol=t.word))
        elif t.word == "move_and_slide" and not own and t.receiver in ("", "self"):
            if args:
                facts.append(Fact(SIGNAL_GODOT3, 0.85, "move_and_slide(velocity, ...) with arguments (Godot 4 reads the velocity property)",
                                  line, "move_and_slide(velocity)", "velocity = ...; move_and_slide()", symbol=t.word))
            else:
                facts.append(Fact(SIGNAL_GODOT4, 0.8, "move_and_slide() without arguments (Godot 4)", line, symbol=t.word))
        elif t.word == "intersect_ray" and not own and t.prev_char == ".":
            if len(args) >= 2:
                facts.append(Fact(SIGNAL_GODOT3, 0.85, "intersect_ray(from, to, ...) (Godot 4 takes a query object)", line,
                                  "intersect_ray(from, to)", "intersect_ray(PhysicsRayQueryParameters2D.create(from, to))", symbol=t.word))
        elif t.word in ("rpc", "rpc_id") and not own and t.receiver not in ("", "self", "$node") and args:
            # Godot 3 RPCs name the method as a string: node.rpc_id(id, "method", ...).
            # Godot 4 also calls them on the method itself: method.rpc_id(id, args...).
            name_arg = args[1] if t.word == "rpc_id" and len(args) > 1 else args[0] if t.word == "rpc" else ""
            if t.word == "rpc_id" and len(args) == 1 or name_arg and not _is_string(name_arg):
                facts.append(Fact(SIGNAL_GODOT4, 0.75, f"`method.{t.word}(...)` on a Callable (Godot 4 only)", line, symbol=t.word))
        elif t.word in ("call", "call_deferred") and t.prev_char == "." and not args and t.receiver not in ("self", "$node"):
            facts.append(Fact(SIGNAL_GODOT4, 0.75, f"`callable.{t.word}()` without a method name (Godot 4 Callable)", line, symbol=t.word))
        elif t.word == "tween_callback" and not own and len(args) >= 2 and _is_string(args[1]):
            facts.append(Fact(SIGNAL_GODOT3, 0.85, "tween_callback(object, \"method\") (Godot 3.5; Godot 4 takes a Callable)", line,
                              "tween_callback(obj, \"method\")", "tween_callback(callable)", symbol=t.word))
    return facts


def _rename_facts(chunk: Chunk, tokens: list[_Token], index: RenameIndex, declared: frozenset[str],
                  hits: Sequence[RetrievalHit]) -> list[Fact]:
    vocab = index.vocabulary
    hit_entries: dict[str, list[RenameEntry]] = {}
    for h in hits:
        if h.table_name == "api_mapping":
            entry = _entry(h.record_id, h.metadata)
            if entry is not None:
                hit_entries.setdefault(entry.old, []).append(entry)
    facts: list[Fact] = []
    seen: set[tuple[str, int]] = set()
    for t in tokens:
        word = t.word
        if t.prev_word in _DECL_WORDS or word in _KEYWORDS:
            continue  # a declaration of the project's own name
        if _user_receiver(t, vocab):
            continue  # Autoload.method(): the project's API, whatever its name
        line = _line_of(chunk, t.start)
        # Retrieved hits first, so a note's basis is a record the request carried.
        for entry in [*hit_entries.get(word, ()), *index.by_old.get(word, ())]:
            if not entry.enabled:
                continue  # disabled pairs are known false-rename traps: never evidence alone
            if _rename_applies(entry, t, declared):
                if any((entry.old, line) == k for k in seen):
                    break
                seen.add((entry.old, line))
                strength = 0.6 if entry.old_in_godot4 else 0.9
                facts.append(Fact(SIGNAL_GODOT3, strength, f"Godot 3 {entry.change_type} `{entry.old}` (renamed `{entry.new}` in Godot 4)",
                                  line, entry.old, entry.new, entry.record_id, symbol=word))
                break
        for entry in index.by_new.get(word, ()):
            if not entry.enabled or entry.new_in_godot3 or entry.new == entry.old:
                continue
            if entry.change_type in ("class", "builtin_type") and t.prev_char != "." and word not in declared:
                best = _preferred_entry(index, word, vocab) or entry
                facts.append(Fact(SIGNAL_GODOT4, 0.85, f"Godot 4 {best.change_type} `{best.new}` (was `{best.old}` in Godot 3)",
                                  line, basis_record_id=best.record_id, symbol=word))
                break
            if entry.change_type == "method" and t.next_char == "(" and not (word in declared and t.receiver in ("", "self")):
                facts.append(Fact(SIGNAL_GODOT4, 0.7, f"Godot 4 method `{entry.new}` (was `{entry.old}` in Godot 3)",
                                  line, basis_record_id=entry.record_id, symbol=word))
                break
    return facts


def _preferred_entry(index: RenameIndex, new: str, vocab: EngineVocabulary) -> RenameEntry | None:
    """Of several old names renamed to ``new``, a real Godot 3 class (Spatial -> Node3D, not TextFile -> Node3D).

    The converter maps some removed classes onto a generic replacement; the
    pair people mean is the one whose old class has the most members.
    """
    entries = [e for e in index.by_new.get(new, ()) if e.enabled]
    entries.sort(key=lambda e: (e.old not in vocab.classes3, -len(vocab.members3.get(e.old, ())), e.record_id))
    return entries[0] if entries else None


def _preferred_basis(index: RenameIndex, new: str, vocab: EngineVocabulary) -> str:
    entry = _preferred_entry(index, new, vocab)
    return entry.record_id if entry else ""


def _user_receiver(t: _Token, vocab: EngineVocabulary) -> bool:
    """`Name.member` where Name is capitalised but no engine class: an autoload or class_name of the project."""
    r = t.receiver
    return bool(r) and r[0].isupper() and r not in ("$node",) and not vocab.is_engine_class(r) and bool(vocab.classes3 or vocab.classes4)


def _rename_applies(entry: RenameEntry, t: _Token, declared: frozenset[str]) -> bool:
    ct = entry.change_type
    own = t.word in declared
    if ct in ("class", "builtin_type"):
        return t.prev_char != "." and not own
    if ct == "method":
        if t.next_char != "(":
            return False
        if t.receiver in ("", "self"):
            # A bare (or self.) call of a method the file declares is the user's own method.
            return not own
        return True
    if ct == "property":
        return t.prev_char == "." and t.next_char != "(" and not (own and t.receiver == "self")
    if ct == "enum":
        return not own and (t.prev_char != "." or t.receiver[:1].isupper())
    if ct == "constant":
        return t.prev_char == "."
    return False


# Names whose version signal comes from the call's shape (arguments, receiver),
# handled by _call_shape_facts and the syntax tables, never by name alone.
_SHAPE_WORDS = frozenset({
    "emit", "instantiate", "instance", "connect", "disconnect", "is_connected", "move_and_slide",
    "move_and_slide_with_snap", "intersect_ray", "tween_callback", "yield", "call", "call_deferred", "rpc", "rpc_id",
})
# Builtin containers: `x.empty()` on an untyped receiver is almost always one of these.
_CONTAINERS3 = ("Array", "Dictionary", "String", "PoolStringArray", "PoolIntArray", "PoolRealArray", "PoolByteArray",
                "PoolVector2Array", "PoolVector3Array", "PoolColorArray")
_CONTAINERS4 = ("Array", "Dictionary", "String", "PackedStringArray", "PackedInt32Array", "PackedFloat32Array",
                "PackedByteArray", "PackedVector2Array", "PackedVector3Array", "PackedColorArray")
_EXTENDS_RE = re.compile(r"^[ \t]*extends[ \t]+([A-Za-z_]\w*)[ \t]*$", re.M)
_LOCAL_RE = re.compile(r"\b(?:var|const|for)[ \t]+([A-Za-z_]\w*)")
_PARAMS_RE = re.compile(r"^[ \t]*(?:static[ \t]+)?func[ \t]+\w+[ \t]*\(([^)]*)\)", re.M)


def _script_base(chunk: Chunk, index: RenameIndex) -> tuple[str, str]:
    """The class the chunk's script extends, as named in Godot 3 and in Godot 4 ("" when unknown)."""
    m = _EXTENDS_RE.search(chunk.surrounding_context) or _EXTENDS_RE.search(chunk.code_mask or chunk.code_text)
    if not m:
        return "", ""
    vocab = index.vocabulary
    base = m.group(1)
    base3 = base if base in vocab.members3 else ""
    base4 = base if base in vocab.members4 else ""
    if not base4:
        renamed = [e.new for e in index.by_old.get(base, ()) if e.enabled and e.change_type == "class"]
        base4 = next((n for n in renamed if n in vocab.members4), "")
    if not base3:
        entry = _preferred_entry(index, base, vocab)
        base3 = entry.old if entry and entry.old in vocab.members3 else ""
    return base3, base4


def _local_names(mask: str) -> frozenset[str]:
    names = set(_LOCAL_RE.findall(mask))
    for params in _PARAMS_RE.findall(mask):
        for p in params.split(","):
            m = re.match(r"\s*([A-Za-z_]\w*)", p)
            if m:
                names.add(m.group(1))
    return frozenset(names)


def _vocabulary_facts(chunk: Chunk, tokens: list[_Token], index: RenameIndex, declared: frozenset[str]) -> list[Fact]:
    """Names that exist in one version's class reference only."""
    vocab = index.vocabulary
    if not (vocab.classes3 or vocab.classes4):
        return []
    mask = chunk.code_mask or chunk.code_text
    base3, base4 = _script_base(chunk, index)
    inherited3 = vocab.members3.get(base3, frozenset())
    inherited4 = vocab.members4.get(base4, frozenset())
    locals_ = _local_names(mask)
    facts: list[Fact] = []
    seen: set[tuple[str, int]] = set()

    def add(signal: str, strength: float, what: str, t: _Token, old: str = "", new: str = "") -> None:
        line = _line_of(chunk, t.start)
        if (t.word, line) in seen:
            return
        seen.add((t.word, line))
        facts.append(Fact(signal, strength, what, line, old, new, symbol=t.word))

    for t in tokens:
        w = t.word
        if w in _KEYWORDS or w in _SHAPE_WORDS or (w in declared and t.receiver in ("", "self")):
            continue
        if t.prev_word in _DECL_WORDS:
            # A function that overrides an engine virtual only one version has.
            if t.prev_word == "func" and w.startswith("_") and len(w) > 3:
                if w in vocab.member_names3 and w not in vocab.member_names4:
                    add(SIGNAL_GODOT3, 0.8, f"override of Godot 3 virtual `{w}` (gone in Godot 4)", t)
                elif w in vocab.member_names4 and w not in vocab.member_names3:
                    add(SIGNAL_GODOT4, 0.8, f"override of Godot 4 virtual `{w}` (new in Godot 4)", t)
            continue
        if t.prev_char != ".":
            if w in locals_:
                continue
            if w[0].isupper() and not w.isupper():
                if w in vocab.classes3 and w not in vocab.classes4 and w not in vocab.singletons4:
                    add(SIGNAL_GODOT3, 0.85, f"Godot 3 class `{w}` (not in Godot 4)", t, w, _G3_REPLACEMENTS.get(w, ""))
                elif w in vocab.classes4 and w not in vocab.classes3 and w not in vocab.singletons3:
                    add(SIGNAL_GODOT4, 0.85, f"Godot 4 class `{w}` (not in Godot 3)", t)
                continue
            if w.isupper() and len(w) > 3:
                if w in vocab.constants3 and w not in vocab.constants4 and w not in inherited4:
                    add(SIGNAL_GODOT3, 0.8, f"Godot 3 global constant `{w}`", t)
                elif w in vocab.constants4 and w not in vocab.constants3 and w not in inherited3:
                    add(SIGNAL_GODOT4, 0.8, f"Godot 4 global constant `{w}`", t)
                continue
            if t.next_char == "(" and (w in vocab.globals3 or w in vocab.globals4):
                if w in vocab.globals3 and w not in vocab.globals4 and w not in inherited4:
                    add(SIGNAL_GODOT3, 0.9, f"Godot 3 global function `{w}()` (not in Godot 4)", t, w, _G3_REPLACEMENTS.get(w, ""))
                elif w in vocab.globals4 and w not in vocab.globals3 and w not in inherited3:
                    add(SIGNAL_GODOT4, 0.9, f"Godot 4 global function `{w}()` (not in Godot 3)", t)
                continue
            if inherited3 and inherited4:
                # A member of the script's own base class, called or assigned bare.
                in3, in4 = w in inherited3, w in inherited4
                kind = "method" if t.next_char == "(" else "property"
                if in3 and not in4:
                    add(SIGNAL_GODOT3, 0.8, f"Godot 3 {kind} `{w}` of {base3} (not in Godot 4's {base4})", t, w, _G3_REPLACEMENTS.get(w, ""))
                elif in4 and not in3:
                    add(SIGNAL_GODOT4, 0.8, f"Godot 4 {kind} `{w}` of {base4} (not in Godot 3's {base3})", t)
            elif t.next_char == "(":
                _member_name_fact(add, t, vocab)
            continue
        r = t.receiver
        if r and r[0].isupper() and r not in ("$node",):
            # Class-qualified: Engine.editor_hint, OS.get_ticks_msec(), JSON.print().
            if vocab.is_engine_class(r):
                in3 = w in vocab.members3.get(r, frozenset())
                in4 = w in vocab.members4.get(r, frozenset())
                both_known = (r in vocab.members3 or r in vocab.singletons3) and (r in vocab.members4 or r in vocab.singletons4)
                if both_known and in3 and not in4:
                    add(SIGNAL_GODOT3, 0.85, f"Godot 3 member `{r}.{w}` (not in Godot 4)", t, f"{r}.{w}",
                        _G3_REPLACEMENTS.get(f"{r}.{w}", ""))
                elif both_known and in4 and not in3:
                    add(SIGNAL_GODOT4, 0.85, f"Godot 4 member `{r}.{w}` (not in Godot 3)", t)
            continue
        if not _member_name_fact(add, t, vocab) and t.next_char == "(":
            c3 = any(w in vocab.members3.get(k, ()) for k in _CONTAINERS3)
            c4 = any(w in vocab.members4.get(k, ()) for k in _CONTAINERS4)
            if c3 and not c4:
                add(SIGNAL_GODOT3, 0.75, f"Godot 3 Array/Dictionary/String method `{w}()` (renamed in Godot 4)", t, w,
                    _G3_REPLACEMENTS.get(w, ""))
            elif c4 and not c3:
                add(SIGNAL_GODOT4, 0.75, f"Godot 4 Array/Dictionary/String method `{w}()` (not in Godot 3)", t)
    return facts


def _member_name_fact(add, t: _Token, vocab: EngineVocabulary) -> bool:
    """`obj.name` / a bare call whose name one version's whole reference lacks."""
    w = t.word
    if len(w) < 4:
        return False
    in3 = w in vocab.member_names3 or w in vocab.globals3
    in4 = w in vocab.member_names4 or w in vocab.globals4
    call = t.next_char == "("
    if in3 and not in4:
        add(SIGNAL_GODOT3, 0.75 if call else 0.7, f"Godot 3 member `{w}` (no Godot 4 class has it)", t, w, _G3_REPLACEMENTS.get(w, ""))
        return True
    if in4 and not in3:
        add(SIGNAL_GODOT4, 0.75 if call else 0.7, f"Godot 4 member `{w}` (no Godot 3 class has it)", t)
        return True
    return False


def _engine_surface(mask: str, vocab: EngineVocabulary, declared: frozenset[str]) -> bool:
    """Does the code touch any engine name (class, member, global) at all?"""
    if not (vocab.classes3 or vocab.classes4):
        return True
    for t in _tokens(mask):
        if t.word in _KEYWORDS or t.word in declared or t.prev_word in _DECL_WORDS:
            continue
        if (t.next_char == "(" or t.prev_char == "." or t.word[0].isupper()) and vocab.engine_name(t.word):
            return True
    return False


# ---------------------------------------------------------------- direct-chunk facts

def direct_facts(chunk: Chunk, source_kind: str, index: RenameIndex) -> list[Fact]:
    """Facts of a project.godot, scene, resource, .import or .uid chunk, each with its kind.

    The file format (format=2, numeric ids, ``ExtResource( 1 )``, the import
    cache) says which editor last saved a file; Godot 4 loads Godot 3's
    format and rewrites it on save, so it is KIND_FILE_FORMAT, never a type or
    API fact. A node or resource type one version's class reference lacks is
    KIND_REMOVED_TYPE: that version cannot instantiate it.
    """
    text = chunk.code_mask or chunk.code_text
    facts: list[Fact] = []

    def add(pattern: str, signal: str, strength: float, what: str, kind: str, flags: int = re.M) -> None:
        for m in re.finditer(pattern, text, flags):
            facts.append(Fact(signal, strength, what, _line_of(chunk, m.start()), kind=kind))

    if source_kind == "project_config":
        add(r"^config_version[ \t]*=[ \t]*[34]\b", SIGNAL_GODOT3, 0.99, "config_version 3/4 (Godot 3 project file)", KIND_CONFIG)
        add(r"^config_version[ \t]*=[ \t]*5\b", SIGNAL_GODOT4, 0.99, "config_version=5 (Godot 4 project file)", KIND_CONFIG)
        add(r"^config/features[ \t]*=[ \t]*PackedStringArray\([^)]*\"4\.\d", SIGNAL_GODOT4, 0.99, "config/features names Godot 4.x",
            KIND_CONFIG)
        add(r"PoolStringArray\(", SIGNAL_GODOT3, 0.9, "PoolStringArray value (Godot 3 project file format)", KIND_FILE_FORMAT)
        add(r"\"scancode\"|\"physical_scancode\"", SIGNAL_GODOT3, 0.85, "input event scancode (keycode in Godot 4)", KIND_API)
        add(r"\"physical_keycode\"|\"keycode\"", SIGNAL_GODOT4, 0.85, "input event keycode (Godot 4)", KIND_API)
    elif source_kind in ("scene", "resource"):
        add(r"^\[gd_(scene|resource)[^\]]*\bformat=2\b", SIGNAL_GODOT3, 0.6,
            "scene/resource format=2 (saved by Godot 3; Godot 4 loads it and re-saving converts it)", KIND_FILE_FORMAT)
        add(r"^\[gd_(scene|resource)[^\]]*\bformat=[34]\b", SIGNAL_GODOT4, 0.95,
            "scene/resource format=3/4 (saved by Godot 4; Godot 3 cannot load it)", KIND_FILE_FORMAT)
        add(r"\buid=\"uid://", SIGNAL_GODOT4, 0.8, "uid:// resource id (Godot 4 file format)", KIND_FILE_FORMAT)
        add(r"^\[ext_resource[^\]]*\bid=\d+\b", SIGNAL_GODOT3, 0.7, "numeric ext_resource id (Godot 3 file format)", KIND_FILE_FORMAT)
        add(r"(Ext|Sub)Resource\([ \t]+\d+[ \t]+\)", SIGNAL_GODOT3, 0.7, "ExtResource( 1 ) reference (Godot 3 file format)",
            KIND_FILE_FORMAT)
        add(r"(Ext|Sub)Resource\(\"[^\"]+\"\)", SIGNAL_GODOT4, 0.8, "ExtResource(\"id\") reference (Godot 4 file format)",
            KIND_FILE_FORMAT)
        for m in re.finditer(r"\btype=\"([A-Za-z0-9_]+)\"", text):
            facts.extend(_type_facts(chunk, m.group(1), m.start(1), index))
        facts.extend(_property_facts(chunk, text, index))
    elif source_kind == "import_meta":
        # Import metadata is the editor's cache: each version re-imports from the
        # source asset, so everything in it is file format.
        add(r"res://\.import/", SIGNAL_GODOT3, 0.85, "import cache under res://.import (Godot 3; Godot 4 re-imports)",
            KIND_FILE_FORMAT)
        add(r"res://\.godot/imported/", SIGNAL_GODOT4, 0.85, "import cache under res://.godot/imported (Godot 4)", KIND_FILE_FORMAT)
        for m in re.finditer(r"\btype=\"([A-Za-z0-9_]+)\"", text):
            facts.extend(replace(f, kind=KIND_FILE_FORMAT) for f in _type_facts(chunk, m.group(1), m.start(1), index))
    elif source_kind == "uid":
        add(r"^uid://", SIGNAL_GODOT4, 0.9, ".uid sidecar file (Godot 4.4+; Godot 3 ignores it)", KIND_FILE_FORMAT)
    return facts


_HEADER_TYPE_RE = re.compile(r"^\[(?:node|sub_resource|gd_resource)\b[^\]\n]*?\btype=\"([A-Za-z0-9_]+)\"", re.M)


def _property_facts(chunk: Chunk, text: str, index: RenameIndex) -> list[Fact]:
    """`key = value` lines naming a property of one version only.

    With the block's type known (``[node type="Label"]``), the class references
    decide: a property the type has in one version and not under its name in
    the other (Label's ``margin_right`` is Godot 3, ``layout_mode`` Godot 4).
    Without it, only the rename table's Godot 3 names that no Godot 4 class has.
    """
    vocab = index.vocabulary
    m = _HEADER_TYPE_RE.search(text)
    type3 = type4 = ""
    if m:
        name = m.group(1)
        type3 = name if name in vocab.members3 else ""
        type4 = name if name in vocab.members4 else ""
        if type3 and not type4:
            type4 = next((e.new for e in index.by_old.get(name, ()) if e.enabled and e.new in vocab.members4), "")
        if type4 and not type3:
            entry = _preferred_entry(index, name, vocab)
            type3 = entry.old if entry and entry.old in vocab.members3 else ""
    facts: list[Fact] = []
    for pm in re.finditer(r"^([a-z_][a-z0-9_/]*)[ \t]*=", text, re.M):
        prop = pm.group(1).split("/")[0]
        line = _line_of(chunk, pm.start())
        renamed = next((e for e in index.by_old.get(prop, ()) if e.enabled and e.change_type == "property"), None)
        if type3 and type4:
            in3, in4 = prop in vocab.members3[type3], prop in vocab.members4[type4]
            if in3 and not in4:
                facts.append(Fact(SIGNAL_GODOT3, 0.8, f"Godot 3 property `{prop}` of {type3} (not in Godot 4's {type4})", line, prop,
                                  renamed.new if renamed else "", renamed.record_id if renamed else "", kind=KIND_API))
            elif in4 and not in3:
                facts.append(Fact(SIGNAL_GODOT4, 0.8, f"Godot 4 property `{prop}` of {type4} (not in Godot 3's {type3})", line,
                                  kind=KIND_API))
        elif renamed and not renamed.old_in_godot4:
            facts.append(Fact(SIGNAL_GODOT3, 0.8, f"Godot 3 property `{prop}` (renamed `{renamed.new}`)", line, prop,
                              renamed.new, renamed.record_id, kind=KIND_API))
    return facts


def _type_facts(chunk: Chunk, type_name: str, offset: int, index: RenameIndex) -> list[Fact]:
    """A scene/resource type one version lacks; the class references decide, the rename table names the successor."""
    line = _line_of(chunk, offset)
    vocab = index.vocabulary
    renamed = [e for e in index.by_old.get(type_name, ()) if e.enabled and e.change_type in ("class", "builtin_type")]
    if vocab.classes3 or vocab.classes4:
        in3 = type_name in vocab.classes3 or type_name in vocab.singletons3
        in4 = type_name in vocab.classes4 or type_name in vocab.singletons4
        if in3 and not in4:
            if renamed:
                e = renamed[0]
                return [Fact(SIGNAL_GODOT3, 0.85, f"Godot 3 type `{type_name}` (not in Godot 4; renamed `{e.new}`)", line,
                             type_name, e.new, e.record_id, kind=KIND_REMOVED_TYPE)]
            return [Fact(SIGNAL_GODOT3, 0.85, f"Godot 3 type `{type_name}` (removed in Godot 4)", line, type_name,
                         _G3_REPLACEMENTS.get(type_name, ""), kind=KIND_REMOVED_TYPE)]
        if in4 and not in3:
            return [Fact(SIGNAL_GODOT4, 0.85, f"Godot 4 type `{type_name}` (not in Godot 3)", line,
                         basis_record_id=_preferred_basis(index, type_name, vocab), kind=KIND_REMOVED_TYPE)]
        return []
    # Without the class references (a bare rename index) the rename pairs are all there is.
    for entry in renamed:
        if not entry.old_in_godot4:
            return [Fact(SIGNAL_GODOT3, 0.85, f"Godot 3 type `{type_name}` (renamed `{entry.new}` in Godot 4)", line,
                         type_name, entry.new, entry.record_id, kind=KIND_REMOVED_TYPE)]
    for entry in index.by_new.get(type_name, ()):
        if entry.enabled and entry.change_type in ("class", "builtin_type") and not entry.new_in_godot3:
            return [Fact(SIGNAL_GODOT4, 0.85, f"Godot 4 type `{type_name}` (was `{entry.old}`)", line,
                         basis_record_id=_preferred_basis(index, type_name, vocab), kind=KIND_REMOVED_TYPE)]
    return []


def _gdscript_kinds(chunk: Chunk, facts: list[Fact], vocab: EngineVocabulary) -> list[Fact]:
    """Kinds of GDScript facts: grammar is syntax, the script's missing base class a removed type, the rest API."""
    mask = chunk.code_mask or chunk.code_text
    bases = {(_line_of(chunk, m.start(1)), m.group(1)) for m in _EXTENDS_RE.finditer(mask)}
    out: list[Fact] = []
    for f in facts:
        if f.what in _SYNTAX_WHATS:
            f = replace(f, kind=KIND_SYNTAX)
        elif bases and (f.line, f.symbol or f.old) in bases:
            name = f.symbol or f.old
            missing = name not in (vocab.classes4 if f.signal == SIGNAL_GODOT3 else vocab.classes3)
            if missing or not (vocab.classes3 or vocab.classes4):
                f = replace(f, kind=KIND_REMOVED_TYPE)
        out.append(f)
    return out


# ---------------------------------------------------------------- judgment

def chunk_facts(
    chunk: Chunk,
    source_kind: str,
    index: RenameIndex,
    declared_names: frozenset[str] = frozenset(),
    hits: Sequence[RetrievalHit] = (),
) -> list[Fact]:
    if source_kind == "gdscript":
        facts = _gdscript_kinds(chunk, gdscript_facts(chunk, index, declared_names, hits), index.vocabulary)
    else:
        facts = direct_facts(chunk, source_kind, index)
    return [f for f in facts if f.signal != SIGNAL_NEUTRAL]


def judge_chunk(
    chunk: Chunk,
    source_kind: str,
    hits: Sequence[RetrievalHit],
    index: RenameIndex,
    declared_names: frozenset[str] = frozenset(),
) -> Judgment:
    facts = chunk_facts(chunk, source_kind, index, declared_names, hits)
    g3 = [f for f in facts if f.signal == SIGNAL_GODOT3]
    g4 = [f for f in facts if f.signal == SIGNAL_GODOT4]
    s3 = _combine(f.strength for f in g3)
    s4 = _combine(f.strength for f in g4)
    if not facts:
        signal = SIGNAL_NEUTRAL
        surface = source_kind != "gdscript" or _engine_surface(chunk.code_mask or chunk.code_text, index.vocabulary, declared_names)
        confidence = NEUTRAL_WITH_ENGINE_SURFACE if surface else NEUTRAL_NO_ENGINE_SURFACE
        explanation = ("No Godot-3-only or Godot-4-only construct in the code; valid in both versions as far as the rules see."
                       if surface else "Touches no engine API at all: valid in both versions.")
    else:
        signal, confidence = _decide(g3, g4, s3, s4)
        win, lose = (g3, g4) if signal == SIGNAL_GODOT3 else (g4, g3)
        name = "Godot 3" if signal == SIGNAL_GODOT3 else "Godot 4"
        explanation = f"{name}: " + "; ".join(_whats(win))
        if lose:
            explanation += f". Also {'Godot 4' if signal == SIGNAL_GODOT3 else 'Godot 3'}: " + "; ".join(_whats(lose))
        if all(f.kind == KIND_FILE_FORMAT for f in facts):
            explanation += (". File format only: both versions read it" if signal == SIGNAL_GODOT3
                            else ". File format only: Godot 3 cannot read it")
    if len(explanation) > MAX_EXPLANATION:
        explanation = explanation[: MAX_EXPLANATION - 3] + "..."

    fact_records = {f.basis_record_id for f in facts if f.basis_record_id}
    evidence: list[EvidenceUse] = []
    seen_hits: set[tuple[str, str]] = set()
    for hit in hits:
        if (hit.table_name, hit.record_id) in seen_hits:
            continue
        seen_hits.add((hit.table_name, hit.record_id))
        relevant = hit.record_id in fact_records
        if relevant:
            why = "its symbol occurs in the chunk's code"
        elif hit.table_name == "api_mapping" and hit.metadata.get("enabled") is False:
            why = "disabled rename pair: a known false-rename trap, not evidence"
        else:
            why = "retrieved, but its symbol does not occur in the chunk's code"
        evidence.append(EvidenceUse(hit.table_name, hit.record_id, relevant, why))
    notes: list[MigrationNote] = []
    seen_notes: set[tuple[int, str]] = set()
    for f in g3:
        if f.old and f.new and (f.line, f.old) not in seen_notes:
            seen_notes.add((f.line, f.old))
            notes.append(MigrationNote(f.line, f.old, f.new, f.basis_record_id))
    return Judgment(
        signal=signal,
        # Godot 3's file format needs no hand migration: Godot 4 reads it and rewrites it on save.
        needs_migration=any(f.kind != KIND_FILE_FORMAT for f in g3),
        confidence=confidence,
        evidence=tuple(evidence),
        migration_notes=tuple(sorted(notes, key=lambda n: (n.line, n.old))),
        explanation=explanation,
        judge_kind="rules",
        model=RULES_JUDGE_VERSION,
        prompt_version="",
        evidence_kinds=tuple(sorted({f"{f.signal}:{f.kind}" for f in facts})),
    )


def _decide(g3: list[Fact], g4: list[Fact], s3: float, s4: float) -> tuple[str, float]:
    """Signal and confidence of a chunk with facts, on one side or both.

    Facts of both versions in one chunk contradict each other. The side whose
    strongest kind ranks higher wins (grammar over a name, a name over the file
    format) and the weaker side costs it a little; facts of the same rank cost
    it half their strength, and an even split leaves a weak judgment (at most
    0.25) instead of a confident minority label.
    """
    if not g4:
        return SIGNAL_GODOT3, round(s3, 3)
    if not g3:
        return SIGNAL_GODOT4, round(s4, 3)
    r3 = max(_KIND_RANK.get(f.kind, 2) for f in g3)
    r4 = max(_KIND_RANK.get(f.kind, 2) for f in g4)
    if r3 != r4:
        win, lose, signal = (s3, s4, SIGNAL_GODOT3) if r3 > r4 else (s4, s3, SIGNAL_GODOT4)
        return signal, round(win * (1 - 0.25 * lose), 3)
    signal = SIGNAL_GODOT3 if s3 > s4 or (s3 == s4 and len(g3) >= len(g4)) else SIGNAL_GODOT4
    win, lose = (s3, s4) if signal == SIGNAL_GODOT3 else (s4, s3)
    if win - lose < 0.1:
        return signal, round(min(0.25, win * (1 - lose)), 3)
    return signal, round(win * (1 - 0.5 * lose), 3)


def _whats(facts: list[Fact]) -> list[str]:
    seen: dict[str, None] = {}
    for f in sorted(facts, key=lambda f: (-f.strength, f.line)):
        seen.setdefault(f.what, None)
    return list(seen)


def _combine(strengths: Iterable[float]) -> float:
    """Independent facts reinforce each other: 1 - prod(1 - s)."""
    remaining = 1.0
    for s in strengths:
        remaining *= 1.0 - s
    return 1.0 - remaining
