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
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.judging.project_index import FileScope, read_ident
from godot_rag.domain.judging.receivers import ReceiverResolver
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
from godot_rag.prompts import contract_schema

RULES_JUDGE_VERSION = "rules/18"

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
# A Godot 1/2 project file (engine.cfg) or file format (format=1): older than both versions. Its facts
# sit on the Godot 3 side, the version such a project converts to first; the verdict names it.
KIND_GODOT2 = "godot2"
EVIDENCE_KINDS = (KIND_CONFIG, KIND_SYNTAX, KIND_REMOVED_TYPE, KIND_API, KIND_FILE_FORMAT, KIND_GODOT2)
# Which kind wins inside one chunk when both versions have facts: grammar and
# types decide whether a version can load the code at all, names come next,
# the file format least (it says which editor saved the file, not what it holds).
_KIND_RANK = {KIND_CONFIG: 3, KIND_SYNTAX: 3, KIND_REMOVED_TYPE: 3, KIND_GODOT2: 3, KIND_API: 2, KIND_FILE_FORMAT: 1}

# Confidence of a neutral judgment: a chunk that touches no engine name at all
# (a const, an enum, arithmetic on its own fields) is safely neutral; one that
# calls engine APIs the rules found nothing wrong with is only probably so.
NEUTRAL_NO_ENGINE_SURFACE = 0.9
NEUTRAL_WITH_ENGINE_SURFACE = 0.6
# Facts for both versions in one chunk: when they are of the same kind (both
# syntax, both engine API, both bare member names) the chunk is neutral at this
# confidence; otherwise the stronger kind wins, at most at the second figure.
CONFLICT_CONFIDENCE = 0.25
CONFLICT_WINNER_CONFIDENCE = 0.7
# The judgment contract's limits (prompts/judgment_contract.v1.json): the rules judge stays within them.
_CONTRACT_PROPERTIES = contract_schema("v1")["properties"]
MAX_EXPLANATION: int = _CONTRACT_PROPERTIES["explanation"]["maxLength"]
MAX_MIGRATION_NOTES: int = _CONTRACT_PROPERTIES["migration_notes"]["maxItems"]


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
    # How sure the reading of the name is: 2 = syntax only one version parses,
    # 1 = an engine name (a resolved receiver, a class, a rename pair), 0 = a
    # member name on a receiver nothing resolves. Within one kind, conflicting
    # facts are weighed by tier.
    tier: int = 1
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
    # Parent class, and the type of each member a class declares itself (return
    # type of a method, type of a property): what resolves `get_tree().x` or
    # `global_transform.xform()` to a class.
    parents3: dict[str, str] = field(default_factory=dict)
    parents4: dict[str, str] = field(default_factory=dict)
    types3: dict[str, dict[str, str]] = field(default_factory=dict)
    types4: dict[str, dict[str, str]] = field(default_factory=dict)
    # (class, member) -> the Godot 3 class-reference record id (docs_chunks), for notes on removed members.
    records3: dict[tuple[str, str], str] = field(default_factory=dict)
    # Property setters and getters (set_name, is_editor_hint): callable, but listed with their
    # property only. ``members3``/``members4`` include them per class; ``member_names`` does not.
    accessor_names3: frozenset[str] = frozenset()
    accessor_names4: frozenset[str] = frozenset()
    # Member names that only editor classes declare (EditorPlugin.build), per version.
    editor_only3: frozenset[str] = frozenset()
    editor_only4: frozenset[str] = frozenset()
    # (declaring class, property) of Godot 4 properties the reference marks deprecated: kept for compatibility,
    # often the Godot 3 storage names its reference never listed (MultiMesh.transform_array).
    deprecated_properties4: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def from_class_references(cls, rows3: Iterable[dict], rows4: Iterable[dict]) -> EngineVocabulary:
        v3 = _version_vocabulary(rows3)
        v4 = _version_vocabulary(rows4)
        return cls(
            classes3=v3["classes"],
            classes4=v4["classes"],
            members3=v3["members"],
            members4=v4["members"],
            member_names3=v3["member_names"],
            member_names4=v4["member_names"],
            globals3=v3["globals"],
            globals4=v4["globals"],
            constants3=v3["constants"],
            constants4=v4["constants"],
            singletons3=v3["singletons"],
            singletons4=v4["singletons"],
            parents3=v3["parents"],
            parents4=v4["parents"],
            types3=v3["types"],
            types4=v4["types"],
            records3=v3["records"],
            accessor_names3=v3["accessor_names"],
            accessor_names4=v4["accessor_names"],
            editor_only3=v3["editor_only"],
            editor_only4=v4["editor_only"],
            deprecated_properties4=v4["deprecated_properties"],
        )

    def declaring_class(self, version: str, klass: str, member: str) -> str:
        """The class of ``klass``'s chain that declares ``member`` in that version's reference ("" when none)."""
        own = self.types3 if version == "3" else self.types4
        parents = self.parents3 if version == "3" else self.parents4
        k: str | None = klass
        for _ in range(64):
            if not k:
                return ""
            if member in own.get(k, {}):
                return k
            k = parents.get(k)
        return ""

    def member_type(self, klass: str, member: str) -> str:
        """Return or property type of ``klass.member`` (Godot 3 reference first, then Godot 4; "" when unknown)."""
        t3, t4 = self.member_types(klass, member)
        return t3 or t4

    def member_types(self, klass: str, member: str, klass4: str = "") -> tuple[str, str]:
        """Return or property type of ``klass.member`` in the Godot 3 and in the Godot 4 reference ("" where
        unknown): `Sprite3D.texture` is a Texture in Godot 3 and a Texture2D in Godot 4. ``klass4`` names the
        class in Godot 4 when it differs."""
        out = []
        for version, k in (("3", klass), ("4", klass4 or klass)):
            decl = self.declaring_class(version, k, member)
            t = (self.types3 if version == "3" else self.types4)[decl][member] if decl else ""
            out.append(t if t not in ("void", "Variant") else "")
        return out[0], out[1]

    @classmethod
    def empty(cls) -> EngineVocabulary:
        e: frozenset[str] = frozenset()
        return cls(e, e, {}, {}, e, e, e, e, e, e, e, e)

    def is_engine_class(self, name: str) -> bool:
        return name in self.classes3 or name in self.classes4 or name in self.singletons3 or name in self.singletons4

    def godot4_only_class(self, name: str) -> bool:
        """A class (or singleton) name only Godot 4 has: NavigationAgent3D, CharacterBody2D, Time."""
        return (name in self.classes4 or name in self.singletons4) and not (name in self.classes3 or name in self.singletons3)

    def engine_name(self, name: str) -> bool:
        return (
            name in self.member_names3
            or name in self.member_names4
            or name in self.globals3
            or name in self.globals4
            or self.is_engine_class(name)
            or name in self.constants3
            or name in self.constants4
        )


_EDITOR_CLASS_PREFIXES = ("Editor", "VisualScript")


def _version_vocabulary(rows: Iterable[dict]) -> dict:
    from godot_rag.domain.retrieval.knowledge import ClassReferenceIds

    own: dict[str, set[str]] = {}
    parent: dict[str, str] = {}
    globals_: set[str] = set()
    constants: set[str] = set()
    singletons: set[str] = set()
    types: dict[str, dict[str, str]] = {}
    records: dict[tuple[str, str], str] = {}
    accessors: dict[str, set[str]] = {}
    deprecated_properties: set[tuple[str, str]] = set()
    ids = ClassReferenceIds()
    for r in rows:
        klass, kind, name = r["class"], r.get("kind"), r.get("name") or ""
        rid = ids.next_id(r) if r.get("engine_version") else ""
        if kind == "class" and klass[:1] != "@":
            records.setdefault((klass, ""), rid)  # the class's own record
        if kind in ("method", "property", "signal", "constant") and name and klass[:1] != "@":
            records.setdefault((klass, name), rid)
            if kind in ("method", "property"):
                types.setdefault(klass, {}).setdefault(name, str(r.get("return_type") or r.get("type") or ""))
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
        if kind == "property":
            if r.get("deprecated"):
                deprecated_properties.add((klass, name))
            # A property's setter and getter are methods scripts call (node.set_name()), though
            # the reference lists them only with the property.
            for accessor in (r.get("setter"), r.get("getter")):
                if accessor and isinstance(accessor, str) and accessor != "None":
                    accessors.setdefault(klass, set()).add(accessor)
    members: dict[str, frozenset[str]] = {}
    for klass in own:
        acc: set[str] = set()
        seen: set[str] = set()
        k: str | None = klass
        while k and k not in seen:
            seen.add(k)
            acc |= own.get(k, set()) | accessors.get(k, set())
            k = parent.get(k)
        members[klass] = frozenset(acc)
    classes = frozenset(k for k in own if not k.startswith("@"))
    member_names = frozenset(n for names in own.values() for n in names)
    # Names only editor classes declare (EditorPlugin.build, VisualScriptReturn.return_type): a game
    # script calling one on an object nothing resolves is far likelier calling its own method.
    game_names = frozenset(n for k, names in own.items() if not k.startswith(_EDITOR_CLASS_PREFIXES) for n in names)
    editor_only = member_names - game_names
    accessor_names = frozenset(n for names in accessors.values() for n in names)
    return {
        "classes": classes,
        "members": members,
        "member_names": member_names,
        "accessor_names": accessor_names,
        "editor_only": editor_only,
        "globals": frozenset(globals_),
        "constants": frozenset(constants),
        "singletons": frozenset(singletons),
        "parents": parent,
        "types": types,
        "records": records,
        "deprecated_properties": frozenset(deprecated_properties),
    }


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
    def from_payloads(cls, rows: Iterable[tuple[str, dict]], vocabulary: EngineVocabulary | None = None) -> RenameIndex:
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
        """Every record a rules note may rest on: rename pairs, the authored member changes, class-reference members."""
        return (
            frozenset(e.record_id for entries in self.by_old.values() for e in entries)
            | shipped_change_ids()
            | frozenset(self.vocabulary.records3.values())
        )


def _entry(record_id: str, p: dict) -> RenameEntry | None:
    if p.get("language") == "csharp" or not p.get("old_symbol"):
        return None
    return RenameEntry(
        record_id,
        p["old_symbol"],
        p.get("new_symbol", ""),
        p.get("change_type", ""),
        bool(p.get("enabled", True)),
        bool(p.get("old_in_godot4", False)),
        bool(p.get("new_in_godot3", False)),
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
            names.update(declared_in(text))
        elif kind == "block":
            names.update(shader_declared_names(text))
    return frozenset(names)


# --------------------------------------------------------------- linear scans of hostile text
#
# Chunk text is the project's, and a project can be crafted: every scan below
# looks at each character a bounded number of times. The regular expressions
# they replace nested or overlapped their quantifiers (a chain of optional
# annotations, "anything up to a ')'" retried from every line), which made a
# 100 KB line take seconds and a 2 MB file hours.


class _CloseFinder:
    """``text.find(ch, start)`` for starts that only move forward, in linear time overall.

    A search that found nothing is remembered: every later start finds nothing too,
    instead of scanning to the end again (the quadratic case: many unclosed '(').
    """

    def __init__(self, text: str, ch: str):
        self.text, self.ch = text, ch
        self.last_start, self.last_found = -1, -1
        self.none_after = len(text) + 1

    def find(self, start: int) -> int:
        if start >= self.none_after:
            return -1
        if self.last_start <= start <= self.last_found:
            return self.last_found
        found = self.text.find(self.ch, start)
        if found < 0:
            self.none_after = start
        else:
            self.last_start, self.last_found = start, found
        return found


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _ident_start(c: str) -> bool:
    return c == "_" or ("a" <= c <= "z") or ("A" <= c <= "Z")


_DECL_PREFIX_WORDS = ("export", "onready", "static")
_DECL_KEYWORDS = ("var", "const", "signal")


def declared_in(text: str) -> list[str]:
    """Names declared by ``var`` / ``const`` / ``signal`` statements, after any annotations
    (``@export_range(0, 10)``, on the same or earlier lines) and Godot 3 prefixes
    (``export(int)``, ``onready``, ``static``). One forward pass.
    """
    names: list[str] = []
    n = len(text)
    closes = _CloseFinder(text, ")")
    i = 0
    chain = True  # only whitespace and declaration prefixes since a line start
    annotations_allowed = True  # annotations come before the Godot 3 keywords
    while i < n:
        c = text[i]
        if c == "\n":
            chain, annotations_allowed = True, True
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if c == "@" and chain and annotations_allowed:
            j = i + 1
            while j < n and _is_word(text[j]):
                j += 1
            if j > i + 1 and j < n and text[j] == "(":
                close = closes.find(j)
                j = close + 1 if close >= 0 else -1
            if j > i + 1 and j < n and text[j].isspace():
                i = j
                continue
            chain = False
            i += 1
            continue
        if _is_word(c):
            j = i
            while j < n and _is_word(text[j]):
                j += 1
            word = text[i:j]
            if chain and word in _DECL_PREFIX_WORDS:
                if word == "export" and j < n and text[j] == "(":
                    close = closes.find(j)
                    j = close + 1 if close >= 0 else n
                if j < n and text[j].isspace():
                    annotations_allowed = False
                    i = j
                    continue
            elif chain and word in _DECL_KEYWORDS and j < n and text[j].isspace():
                k = j
                while k < n and text[k].isspace():
                    k += 1
                if k < n and _ident_start(text[k]):
                    end = k + 1
                    while end < n and _is_word(text[end]):
                        end += 1
                    names.append(text[k:end])
                    i, chain = end, False
                    continue
            chain = False
            i = j
            continue
        chain = False
        i += 1
    return names


def _trailing_ident(text: str) -> tuple[int, str]:
    """(start, name) of the identifier ``[A-Za-z_]\\w*`` that ends ``text`` ((-1, "") when none)."""
    j = len(text)
    while j > 0 and _is_word(text[j - 1]):
        j -= 1
    while j < len(text) and not _ident_start(text[j]):
        j += 1
    return (j, text[j:]) if j < len(text) else (-1, "")


class _At:
    """A match-like position for scans that replace a pattern in the syntax tables."""

    __slots__ = ("_start",)

    def __init__(self, start: int):
        self._start = start

    def start(self) -> int:
        return self._start


class _LambdaScan:
    """``func`` after ``= ( , : [`` or ``return`` with a ``) [-> Type]:`` later on its line: a lambda.

    One match per line at most, at the first such ``func``; the same as the
    pattern ``(?:[=(,:\\[]|return)[ \\t]*func\\b[^\\n]*\\)[ \\t]*(->[ \\t]*\\w+[ \\t]*)?:``
    without its retry from every opener of a long line.
    """

    _OPENER = re.compile(r"(?:[=(,:\[]|return)[ \t]*func\b")
    _CLOSE = re.compile(r"\)[ \t]*(?:->[ \t]*\w+[ \t]*)?:")

    def finditer(self, text: str) -> Iterator[_At]:
        start = 0
        n = len(text)
        while start <= n:
            end = text.find("\n", start)
            end = n if end < 0 else end
            last_close = -1
            for m in self._CLOSE.finditer(text, start, end):
                last_close = m.start()
            if last_close >= 0:
                opener = self._OPENER.search(text, start, last_close)
                if opener is not None:
                    yield _At(opener.start())
            start = end + 1


class _PatternGuardScan:
    """A match pattern with a guard, ``<pattern> when <condition>:`` (Godot 4.3): an indented line that is not
    a statement (it starts with no keyword), with ``when`` after some pattern text and a ``:`` ending the line.
    Godot 3 parses no such line: a pattern or an expression ends before ``when``. One linear pass per line."""

    _WHEN = re.compile(r"[ \t]when[ \t]")
    _STATEMENT = re.compile(
        r"[ \t]+(?:if|elif|else|while|for|func|static|var|const|match|return|signal|class|enum|await|assert|pass|break|continue)\b"
    )

    def finditer(self, text: str) -> Iterator[_At]:
        start = 0
        n = len(text)
        while start < n:
            end = text.find("\n", start)
            end = n if end < 0 else end
            line = text[start:end]
            guard = self._WHEN.search(line)
            if (
                guard is not None
                and line[:1] in (" ", "\t")
                and line.strip()[:1] not in ("", "#", ":")
                and self._STATEMENT.match(line) is None
                and line.rstrip().endswith(":")
                and line[guard.end() :].rstrip()[:-1].strip()
            ):
                yield _At(start + guard.start() + 1)
            start = end + 1


class _HeadParenScan:
    """``head ( ... ) tail`` where the parentheses may span lines: each ')' found once, from the head on."""

    def __init__(self, head: str, tail: str, flags: int = 0):
        self.head = re.compile(head, flags)
        self.tail = re.compile(tail)

    def matches(self, text: str) -> Iterator[tuple[int, str]]:
        """(start, text between the parentheses) of each match, not overlapping."""
        closes = _CloseFinder(text, ")")
        pos = 0
        while True:
            m = self.head.search(text, pos)
            if m is None:
                return
            close = closes.find(m.end())
            if close < 0:
                return  # no ')' after this head: none after any later head either
            t = self.tail.match(text, close + 1)
            if t is None:
                pos = m.end()
                continue
            yield m.start(), text[m.end() : close]
            pos = t.end()

    def finditer(self, text: str) -> Iterator[_At]:
        for start, _ in self.matches(text):
            yield _At(start)


# ---------------------------------------------------------------- GDScript facts

_G3_SYNTAX: list[tuple[re.Pattern[str] | _HeadParenScan, str, float, str, str]] = [
    (re.compile(r"^[ \t]*tool[ \t]*$", re.M), "bare `tool` keyword (Godot 4 writes @tool)", 0.95, "tool", "@tool"),
    (
        re.compile(r"^[ \t]*export\b[ \t]*(\(|var\b|onready\b)", re.M),
        "`export` keyword (Godot 4 uses @export annotations)",
        0.95,
        "export",
        "@export",
    ),
    (
        re.compile(r"^[ \t]*(export[ \t]*(\([^)\n]*\))?[ \t]+)?onready[ \t]+var\b", re.M),
        "`onready` keyword (Godot 4 uses @onready)",
        0.95,
        "onready",
        "@onready",
    ),
    (re.compile(r"\bsetget\b"), "`setget` (Godot 4 uses set/get property syntax)", 0.95, "setget", "set/get"),
    (re.compile(r"(?<![\w.])yield[ \t]*\("), "`yield()` (Godot 4 uses await)", 0.95, "yield(", "await"),
    (
        re.compile(r"\.instance[ \t]*\([ \t]*\)"),
        "`PackedScene.instance()` (instantiate() in Godot 4)",
        0.85,
        "instance()",
        "instantiate()",
    ),
    (
        re.compile(r"^[ \t]*(remote|master|puppet|remotesync|mastersync|puppetsync|slave|sync)[ \t]+(func|var)\b", re.M),
        "RPC keyword on a member (Godot 4 uses @rpc)",
        0.95,
        "remote func",
        "@rpc func",
    ),
    (
        _HeadParenScan(r"^[ \t]*func[ \t]+_init\(", r"[ \t]*\.[ \t]*\(", re.M),
        "`_init().(...)` parent constructor call",
        0.95,
        "_init().()",
        "super()",
    ),
    (
        # Godot 3's parser skips a `var` before a parameter name; Godot 4's expects the name.
        re.compile(r"^[ \t]*(?:static[ \t]+)?func[ \t]+\w+[ \t]*\((?:[^()\n]*,)?[ \t]*var[ \t]+[A-Za-z_]", re.M),
        "`var` before a parameter (Godot 4 rejects it)",
        0.9,
        "func f(var x)",
        "func f(x)",
    ),
    (
        # Bare, through self or on any object (`body.move_and_slide_with_snap(...)`): no Godot 4 class has it, and
        # a project's own method of that name is set aside by its receiver (_syntax_member).
        re.compile(r"(?:\.|(?<![\w.]))move_and_slide_with_snap[ \t]*\("),
        "`move_and_slide_with_snap()` (Godot 4 sets floor_snap_length)",
        0.9,
        "move_and_slide_with_snap()",
        "move_and_slide()",
    ),
]

_G4_SYNTAX: list[tuple[re.Pattern[str] | _LambdaScan | _PatternGuardScan, str, float]] = [
    (
        re.compile(r"(?:^|[ \t;])@(export\w*|onready|tool|icon|rpc|warning_ignore\w*|static_unload|abstract)\b", re.M),
        "annotation (Godot 4 only)",
        0.95,
    ),
    (re.compile(r"(?<![\w.])await\b"), "`await` (Godot 4 only)", 0.95),
    (re.compile(r"(?<![\w.])super[ \t]*[.(]"), "`super` call (Godot 4 only)", 0.9),
    (_LambdaScan(), "lambda (Godot 4 only)", 0.9),
    (re.compile(r"\bArray\[[ \t]*[A-Za-z_]\w*[ \t]*\]"), "typed array (Godot 4 only)", 0.9),
    (re.compile(r"\bDictionary\[[ \t]*[A-Za-z_]\w*[ \t]*,"), "typed dictionary (Godot 4.4+)", 0.9),
    (re.compile(r"\.emit[ \t]*\("), "`signal.emit()` (Godot 4 only)", 0.85),
    (
        re.compile(r"^[ \t]+set[ \t]*\([ \t]*\w+[ \t]*\)[ \t]*:|^[ \t]+get[ \t]*:", re.M),
        "set/get property syntax (Godot 4 only)",
        0.9,
    ),
    (re.compile(r"\.instantiate[ \t]*\("), "`instantiate()` (Godot 4 name)", 0.85),
    (re.compile(r"^[ \t]*static[ \t]+var\b", re.M), "`static var` (Godot 4.1+)", 0.9),
    (re.compile(r"\bfor[ \t]+\w+[ \t]*:[ \t]*\w+[ \t]+in\b"), "typed loop variable (Godot 4.2+)", 0.9),
    (re.compile(r"\bis[ \t]+not\b"), "`is not` operator (Godot 4 only)", 0.85),
    # Godot 3's signal parameters are bare names: a type after one does not parse there.
    (
        re.compile(r"^[ \t]*signal[ \t]+\w+[ \t]*\([^()]*?\w[ \t]*:[ \t]*[A-Za-z_]", re.M),
        "typed signal parameter (Godot 4 only)",
        0.9,
    ),
    (_PatternGuardScan(), "match pattern guard `when` (Godot 4.3+)", 0.9),
]

# The syntax-table entries that are really a name (a call another version names
# differently), not grammar: they are API evidence, and a project method of
# that name is the project's own.
_NAME_LIKE_SYNTAX = ("`PackedScene.instance()`", "move_and_slide_with_snap", "`signal.emit()`", "`instantiate()`")
_LITERAL_WHATS = (
    'StringName literal &"..." (Godot 4 only)',
    'NodePath literal ^"..." (Godot 4 only)',
    'raw string literal r"..." (Godot 4 only)',
)
_SYNTAX_WHATS = frozenset(
    [str(entry[1]) for entry in (*_G3_SYNTAX, *_G4_SYNTAX) if not any(n in str(entry[1]) for n in _NAME_LIKE_SYNTAX)]
    + list(_LITERAL_WHATS)
)

# Literal prefixes live in code, the string after them is masked: check code_text
# at positions where the mask shows code.
# StringName &"..", NodePath ^".." and (Godot 4.3) raw string r".." literals: Godot 3's tokenizer has none of them.
_G4_LITERALS = re.compile(r"(?<![\w\"'])([&^r])[\"']")

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
    # A line break index per text, not a count per call: a long line of many facts was quadratic.
    return chunk.span.start_line + bisect_left(_line_breaks(chunk.code_text), offset)


@lru_cache(maxsize=64)
def _line_breaks(text: str) -> list[int]:
    """Offsets of ``text``'s line breaks (shared, never modified)."""
    return [m.start() for m in re.finditer("\n", text)]


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
    # Spans do not overlap and come in order: one bisect per identifier keeps this linear.
    node_path_spans = [(m.start(), m.end()) for m in _NODE_PATH_RE.finditer(mask)]
    span_starts = [a for a, _ in node_path_spans]
    out: list[_Token] = []
    for m in _IDENT_RE.finditer(mask):
        start, end = m.start(), m.end()
        k = bisect_right(span_starts, start) - 1
        if k >= 0 and start < node_path_spans[k][1]:
            continue  # $Node/Path and %Unique names are the project's nodes
        if start > 0 and mask[start - 1] == "@":
            continue  # annotation name
        # A bounded look-back keeps this linear in the chunk size.
        before = mask[max(0, start - 160) : start].rstrip(" \t")
        prev_char = before[-1:] if before else ""
        after = end  # the next character after blanks, without a copy of the rest of the text per token
        while after < len(mask) and mask[after] in " \t":
            after += 1
        next_char = mask[after : after + 1]
        # Hand scans backwards (the patterns they replace were retried from every start of the window).
        prev_word = _trailing_ident(before)[1]
        receiver = ""
        if prev_char == ".":
            head = before[:-1].rstrip(" \t")
            if head[-1:] in (")", "]"):
                receiver = head[-1]
            else:
                at, receiver = _trailing_ident(head)
                if at < 0:
                    receiver = "?"
                else:
                    j = at
                    while j > 0 and (_is_word(head[j - 1]) or head[j - 1] == "/"):
                        j -= 1
                    if j > 0 and head[j - 1] in "$%":
                        receiver = "$node"
        out.append(_Token(m.group(0), start, end, prev_char, next_char, prev_word, receiver))
    return out


class _Calls:
    """Every bracket of a mask matched in one pass: a call's arguments without rescanning the text.

    Scanning forward from each '(' to its match made nested or unclosed calls
    quadratic. Brackets of any kind nest together (as the chunker sees them).
    """

    # Arguments are looked at by their ends and first words only: a longer one keeps its head and tail.
    ARG_KEEP = 2048

    def __init__(self, mask: str):
        self.mask = mask
        self.close: dict[int, int] = {}
        self.commas: dict[int, list[int]] = {}
        stack: list[int] = []
        for i, ch in enumerate(mask):
            if ch in "([{":
                stack.append(i)
            elif ch in ")]}":
                if stack:
                    self.close[stack.pop()] = i
            elif ch == "," and stack:
                self.commas.setdefault(stack[-1], []).append(i)

    def _arg(self, a: int, b: int) -> str:
        if b - a <= 2 * self.ARG_KEEP:
            return self.mask[a:b].strip()
        return self.mask[a : a + self.ARG_KEEP].lstrip() + self.mask[b - self.ARG_KEEP : b].rstrip()

    def args(self, open_paren: int) -> list[str] | None:
        """Top-level arguments of the call whose '(' is at ``open_paren`` (None when unbalanced)."""
        close = self.close.get(open_paren)
        if close is None:
            return None
        args: list[str] = []
        cur = open_paren + 1
        for comma in self.commas.get(open_paren, ()):
            args.append(self._arg(cur, comma))
            cur = comma + 1
        tail = self._arg(cur, close)
        if tail or args:
            args.append(tail)
        return args


def _is_string(arg: str) -> bool:
    return len(arg) >= 2 and arg[0] in "\"'" and arg[-1] == arg[0]


@dataclass(frozen=True)
class _Member:
    """Whose member ``recv.name`` is: ``project`` (never evidence), ``engine`` (of class ``engine``) or ``unknown``."""

    kind: str
    engine: str = ""
    basis: str = ""
    engine4: str = ""  # the receiver's class in Godot 4 when its type differs by version


def _member_classes(member: _Member, index: RenameIndex) -> tuple[str, str]:
    """The receiver's class as named in Godot 3 and in Godot 4."""
    c3, c4 = _class_pair(member.engine, index)
    if member.engine4 and member.engine4 in index.vocabulary.members4:
        c4 = member.engine4
    return c3, c4


class _Context:
    """Per-chunk receiver resolution over the file's scope (empty scope: no project index)."""

    def __init__(self, chunk: Chunk, index: RenameIndex, scope: FileScope | None):
        self.chunk = chunk
        self.index = index
        self.scope = scope or FileScope()
        self.mask = chunk.code_mask or chunk.code_text
        extends = _extends_name(chunk)
        self.resolver = (
            ReceiverResolver.for_chunk(self.scope, index.vocabulary, self.mask, chunk.code_text, extends)
            if (index.vocabulary.classes3 or index.vocabulary.classes4)
            else None
        )
        own = self.scope.types.get(self.scope.self_key)
        self.self_members = own.members if own is not None else frozenset()
        self.self_engine = own.engine_base if own is not None else ""
        # Engine-named members set aside as the project's: word -> why (for the explanation).
        self.discounted: dict[str, str] = {}
        self._members: dict[tuple[int, str], _Member] = {}

    def member_at(self, dot: int, word: str) -> _Member:
        # Several rules ask about the same access: resolve each once.
        key = (dot, word)
        if key not in self._members:
            self._members[key] = self._member_at(dot, word)
        return self._members[key]

    def _member_at(self, dot: int, word: str) -> _Member:
        res = self.resolver.receiver_at(dot) if self.resolver is not None and dot >= 0 else None
        if res is None:
            if word in self.scope.project_names:
                return self._project(word, "the receiver is unresolved and the project defines a member of that name")
            return _Member("unknown", "", f"receiver unresolved; the project defines no `{word}`" if self.scope.known else "")
        if res.kind == "project":
            if word in res.members or not res.known_members or not res.engine:
                return self._project(word, res.basis)
            return _Member("engine", res.engine, f"{res.basis}, extends {res.engine}", res.engine4)
        return _Member("engine", res.engine, res.basis, res.engine4)

    def set_aside(self, word: str, basis: str) -> None:
        """An engine-named member judged the project's: said in the explanation, never counted."""
        self._project(word, basis)

    def _project(self, word: str, basis: str) -> _Member:
        v = self.index.vocabulary
        if word not in self.discounted and (word in v.member_names3 or word in v.member_names4):
            self.discounted[word] = basis
        return _Member("project", "", basis)

    def project_name(self, word: str) -> bool:
        """A bare name the project defines for its scripts (a class_name, an autoload, a constant of a preloaded
        script): the project's, whatever engine class it shares a name with (`class_name ToolButton` in Godot 4,
        where the engine class of that name is gone; an autoload `World`)."""
        key = self.scope.names.get(word)
        if key is None:
            return False
        if word not in self.discounted and self.index.vocabulary.engine_name(word):
            self.discounted[word] = f"the project names `{word}`: {key.removeprefix('script:')}"
        return True

    def member(self, t: _Token) -> _Member:
        if t.receiver == "?":
            return _Member("unknown")  # nothing before the dot: a Godot 3 parent call `.name()`
        dot = self.mask.rfind(".", max(0, t.start - 80), t.start)
        return self.member_at(dot, t.word)


# Godot 2's fixed-process API, which Godot 3 renamed to physics process: in neither class reference, and
# unmistakable in a script (a project's own method of that name is set aside by declared_names).
_GODOT2_CALLS = {
    "set_fixed_process": "set_physics_process",
    "is_fixed_processing": "is_physics_processing",
    "get_fixed_process_delta_time": "get_physics_process_delta_time",
}


def _godot2_facts(chunk: Chunk, tokens: Sequence[_Token], declared_names: frozenset[str]) -> list[Fact]:
    """Godot 2 (and older) API that a script still calls or overrides: KIND_GODOT2 facts on the Godot 3 side."""
    facts: list[Fact] = []
    for t in tokens:
        new = _GODOT2_CALLS.get(t.word)
        if new is not None and t.next_char == "(" and t.receiver in ("", "self") and t.word not in declared_names:
            what = f"{t.word}() is Godot 2 API (Godot 3 renamed it {new}())"
            facts.append(Fact(SIGNAL_GODOT3, 0.8, what, _line_of(chunk, t.start), t.word, new, kind=KIND_GODOT2))
        elif t.word == "_fixed_process" and t.prev_word == "func":
            what = "func _fixed_process(): Godot 2's physics callback, never called by Godot 3 or 4 (_physics_process)"
            facts.append(Fact(SIGNAL_GODOT3, 0.8, what, _line_of(chunk, t.start), t.word, "_physics_process", kind=KIND_GODOT2))
    return facts


def gdscript_facts(
    chunk: Chunk,
    index: RenameIndex,
    declared_names: frozenset[str],
    hits: Sequence[RetrievalHit] = (),
    scope: FileScope | None = None,
) -> list[Fact]:
    mask = chunk.code_mask or chunk.code_text
    ctx = _Context(chunk, index, scope)
    # The members the script's project chain declares are the project's, called bare or through self.
    declared_names = declared_names | ctx.self_members
    facts: list[Fact] = []
    for pattern, what, strength, old, new in _G3_SYNTAX:
        for m in pattern.finditer(mask):
            member = _syntax_member(ctx, m.start())
            if member is not None and member.kind == "project":
                continue
            facts.append(
                Fact(
                    SIGNAL_GODOT3,
                    strength,
                    what + _rests_on(member),
                    _line_of(chunk, m.start()),
                    old,
                    new,
                    tier=1 if member is not None else 2,
                )
            )
    for pattern4, what, strength in _G4_SYNTAX:
        for m in pattern4.finditer(mask):
            member = _syntax_member(ctx, m.start())
            if member is not None and member.kind == "project":
                continue
            facts.append(
                Fact(
                    SIGNAL_GODOT4,
                    strength,
                    what + _rests_on(member),
                    _line_of(chunk, m.start()),
                    tier=1 if member is not None else 2,
                )
            )
    for m in _G4_LITERALS.finditer(chunk.code_text):
        if _in_code(chunk, m.start()):
            kind = {"&": "StringName", "^": "NodePath", "r": "raw string"}[m.group(1)]
            facts.append(
                Fact(SIGNAL_GODOT4, 0.9, f'{kind} literal {m.group(1)}"..." (Godot 4 only)', _line_of(chunk, m.start()), tier=2)
            )
    facts.extend(_super_call_facts(chunk, mask))
    tokens = _tokens(mask)
    facts.extend(_godot2_facts(chunk, tokens, declared_names))
    facts.extend(_call_shape_facts(chunk, mask, tokens, declared_names, ctx))
    rename = _rename_facts(chunk, tokens, index, declared_names, hits, ctx)
    facts.extend(rename)
    renamed_at = {(f.line, f.symbol) for f in rename}
    facts.extend(f for f in _vocabulary_facts(chunk, tokens, index, declared_names, ctx) if (f.line, f.symbol) not in renamed_at)
    # Members set aside as the project's travel as neutral facts, so the explanation can name them.
    facts.extend(
        Fact(
            SIGNAL_NEUTRAL,
            0.0,
            f"`{w}` is the project's own {'name' if w[:1].isupper() else 'member'}, not engine API [{why}]",
            chunk.span.start_line,
            symbol=w,
            tier=-1,
        )
        for w, why in sorted(ctx.discounted.items())
    )
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
    'connect("signal", obj, "method")': "change:connect-callable",
    'disconnect("signal", obj, "method")': "change:disconnect-callable",
}


def _syntax_member(ctx: _Context, start: int) -> _Member | None:
    """For a syntax fact matched at ``.name(``: whose member ``name`` is (None for other syntax)."""
    if start >= len(ctx.mask) or ctx.mask[start] != ".":
        return None
    word, _ = read_ident(ctx.mask, start + 1)
    return ctx.member_at(start, word) if word else None


def _early_godot4_name(vocab: EngineVocabulary, written: str, c3: str, c4: str, word: str, change: str = "") -> str:
    """Why ``word``, a member of Godot 3's ``c3`` that Godot 4.4's ``c4`` lacks, is no Godot 3 evidence here ("" when
    it is): the receiver's class as written only Godot 4 names (`var agent: NavigationAgent3D` then
    `agent.time_horizon`: a name of an earlier Godot 4, which had both, or a port's leftover, never Godot 3 code),
    or both versions name the class alike and a Godot 4.x upgrade guide removed or renamed the member after 4.0
    (`PathFollow2D.lookahead`)."""
    if written and vocab.godot4_only_class(written):
        change = change or f"Godot 3's {c3} has it, Godot 4.4's {c4} has not"
        return f"`{word}` on {written}, a class only Godot 4 names ({change}): a name of an earlier Godot 4 or a port's leftover"
    if c3 and c3 == c4 and (later := later_godot4_change(vocab, c4, word)):
        return f"`{word}` of {c4}: Godot 3 and early Godot 4 both have it ({later})"
    return ""


def _rests_on(member: _Member | None) -> str:
    return f" [{member.basis}]" if member is not None and member.basis else ""


# Characters after which a `.` starts an expression: Godot 3's parent-method call `.method(args)`.
_EXPR_START = frozenset("=(,[{:+-*/%<>!&|")
_EXPR_WORDS = frozenset({"return", "and", "or", "not", "in", "if", "elif", "while", "yield"})


def _super_call_facts(chunk: Chunk, mask: str) -> list[Fact]:
    """``.method(args)`` with nothing before the dot: Godot 3 calls the parent's method so; Godot 4 writes super.

    One pass with the bracket depth: a dot that opens a line inside brackets or
    after a backslash continues a Godot 4 method chain instead.
    """
    facts: list[Fact] = []
    depth = 0
    n = len(mask)
    for i in range(n):
        ch = mask[i]
        if ch in "([{":
            depth += 1
            continue
        if ch in ")]}":
            depth = max(0, depth - 1)
            continue
        if ch != ".":
            continue
        word, j = read_ident(mask, i + 1)
        if not word or j >= n or mask[j] != "(":
            continue
        k = i - 1
        while k >= 0 and mask[k] in " \t":
            k -= 1
        prev = mask[k] if k >= 0 else "\n"
        if prev == "\n":
            b = k - 1
            while b >= 0 and mask[b] in " \t\r":
                b -= 1
            starts = depth == 0 and not (b >= 0 and mask[b] == "\\") and k >= 0
        elif prev in _EXPR_START:
            starts = True
        elif prev.isalnum() or prev == "_":
            e = k
            while k >= 0 and (mask[k].isalnum() or mask[k] == "_"):
                k -= 1
            starts = mask[k + 1 : e + 1] in _EXPR_WORDS and (k < 0 or mask[k] in " \t\n(")
        else:
            starts = False
        if starts:
            facts.append(
                Fact(
                    SIGNAL_GODOT3,
                    0.9,
                    f"parent call `.{word}(...)` (Godot 4 writes super.{word}(...))",
                    _line_of(chunk, i),
                    f".{word}(",
                    f"super.{word}(",
                    "change:super-call",
                    symbol=word,
                    tier=2,
                )
            )
    return facts


def _with_syntax_basis(fact: Fact, retrieved: set[str]) -> Fact:
    # A retrieved record, or one of the authored changes the rules judge ships with
    # (RenameIndex.record_ids, which the contract lets a rules note cite).
    basis = _SYNTAX_BASIS.get(fact.old)
    if (
        fact.signal != SIGNAL_GODOT3
        or fact.basis_record_id
        or not basis
        or (basis not in retrieved and basis not in shipped_change_ids())
    ):
        return fact
    return replace(fact, basis_record_id=_SYNTAX_BASIS[fact.old])


# The calls whose arguments say something (the branches of _call_shape_facts).
_SHAPED_CALLS = frozenset(
    {
        "connect",
        "disconnect",
        "is_connected",
        "move_and_slide",
        "intersect_ray",
        "rpc",
        "rpc_id",
        "call",
        "call_deferred",
        "tween_callback",
    }
)


def _call_shape_facts(chunk: Chunk, mask: str, tokens: list[_Token], declared: frozenset[str], ctx: _Context) -> list[Fact]:
    """Facts that depend on a call's arguments, not only its name."""
    facts: list[Fact] = []
    calls: _Calls | None = None
    for t in tokens:
        if t.next_char != "(" or t.prev_word in _DECL_WORDS or t.word not in _SHAPED_CALLS:
            continue
        own = t.word in declared and t.receiver in ("", "self")
        member = ctx.member(t) if t.prev_char == "." and t.receiver != "self" else None
        if member is not None and member.kind == "project":
            continue  # a project method that shares an engine method's name
        paren = mask.index("(", t.end)
        calls = calls or _Calls(mask)
        args = calls.args(paren)
        if args is None:
            continue
        line = _line_of(chunk, t.start)
        if t.word in ("connect", "disconnect", "is_connected") and not own:
            if len(args) >= 3 and _is_string(args[2]):
                facts.append(
                    Fact(
                        SIGNAL_GODOT3,
                        0.9,
                        f'{t.word}(signal, target, "method") (Godot 4 takes a Callable)',
                        line,
                        f'{t.word}("signal", obj, "method")',
                        f"signal.{t.word}(callable)",
                        symbol=t.word,
                    )
                )
            elif (
                t.word == "connect"
                and t.receiver not in ("", "self")
                and 1 <= len(args) <= 2
                and not _is_string(args[0])
                and args[0] not in ("self",)
                and re.fullmatch(r"[A-Za-z_][\w.]*|func\b.*|Callable\(.*", args[0])
            ):
                facts.append(Fact(SIGNAL_GODOT4, 0.8, "Callable signal connect (Godot 4 only)", line, symbol=t.word))
            elif len(args) == 2 and _is_string(args[0]) and not _is_string(args[1]) and args[1] != "self":
                facts.append(Fact(SIGNAL_GODOT4, 0.8, f'{t.word}("signal", callable) (Godot 4 only)', line, symbol=t.word))
        elif t.word == "move_and_slide" and not own and (t.receiver in ("", "self") or member is not None and args):
            # owner.move_and_slide(v), body.move_and_slide(v): with arguments it is Godot 3's
            # KinematicBody call whatever the receiver, unless the project defines the method.
            if args:
                facts.append(
                    Fact(
                        SIGNAL_GODOT3,
                        0.85,
                        "move_and_slide(velocity, ...) with arguments (Godot 4 reads the velocity property)" + _rests_on(member),
                        line,
                        "move_and_slide(velocity)",
                        "velocity = ...; move_and_slide()",
                        symbol=t.word,
                    )
                )
            else:
                facts.append(Fact(SIGNAL_GODOT4, 0.8, "move_and_slide() without arguments (Godot 4)", line, symbol=t.word))
        elif t.word == "intersect_ray" and not own and t.prev_char == ".":
            if len(args) >= 2:
                facts.append(
                    Fact(
                        SIGNAL_GODOT3,
                        0.85,
                        "intersect_ray(from, to, ...) (Godot 4 takes a query object)",
                        line,
                        "intersect_ray(from, to)",
                        "intersect_ray(PhysicsRayQueryParameters2D.create(from, to))",
                        symbol=t.word,
                    )
                )
        elif t.word in ("rpc", "rpc_id") and not own and t.receiver not in ("", "self", "$node") and args:
            # Godot 3 RPCs name the method as a string: node.rpc_id(id, "method", ...).
            # Godot 4 also calls them on the method itself: method.rpc_id(id, args...).
            name_arg = args[1] if t.word == "rpc_id" and len(args) > 1 else args[0] if t.word == "rpc" else ""
            if t.word == "rpc_id" and len(args) == 1 or name_arg and not _is_string(name_arg):
                facts.append(Fact(SIGNAL_GODOT4, 0.75, f"`method.{t.word}(...)` on a Callable (Godot 4 only)", line, symbol=t.word))
        elif t.word in ("call", "call_deferred") and t.prev_char == "." and not args and t.receiver not in ("self", "$node"):
            facts.append(
                Fact(SIGNAL_GODOT4, 0.75, f"`callable.{t.word}()` without a method name (Godot 4 Callable)", line, symbol=t.word)
            )
        elif t.word == "tween_callback" and not own and len(args) >= 2 and _is_string(args[1]):
            facts.append(
                Fact(
                    SIGNAL_GODOT3,
                    0.85,
                    'tween_callback(object, "method") (Godot 3.5; Godot 4 takes a Callable)',
                    line,
                    'tween_callback(obj, "method")',
                    "tween_callback(callable)",
                    symbol=t.word,
                )
            )
    return facts


def _rename_facts(
    chunk: Chunk, tokens: list[_Token], index: RenameIndex, declared: frozenset[str], hits: Sequence[RetrievalHit], ctx: _Context
) -> list[Fact]:
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
        if t.prev_char != "." and ctx.project_name(word):
            continue  # the project's class_name or autoload that shares a renamed engine class's name
        member = ctx.member(t) if t.prev_char == "." and t.receiver != "self" else None
        if member is not None and member.kind == "project":
            continue  # a project member that shares a renamed engine member's name
        engine3 = _class_pair(member.engine, index)[0] if member is not None and member.kind == "engine" else ""
        engine4 = _member_classes(member, index)[1] if member is not None and member.kind == "engine" else ""
        line = _line_of(chunk, t.start)
        # Retrieved hits first, so a note's basis is a record the request carried.
        for entry in [*hit_entries.get(word, ()), *index.by_old.get(word, ())]:
            if not entry.enabled:
                continue  # disabled pairs are known false-rename traps: never evidence alone
            if _rename_applies(entry, t, declared):
                if engine3 and entry.change_type in ("method", "property") and word not in vocab.members3.get(engine3, ()):
                    break  # the receiver is an engine class that has no such member: not this rename
                if (
                    (member is None or member.kind == "unknown")
                    and entry.change_type in ("method", "property")
                    and _project_word(word)
                ):
                    break  # `unit.get_speed()` on an object nothing names: the project's accessor of its `speed`
                if any((entry.old, line) == k for k in seen):
                    break
                seen.add((entry.old, line))
                early = (
                    _early_godot4_name(
                        vocab, member.engine, engine3, engine4, word, f"Godot 3's name, renamed `{entry.new}` in Godot 4"
                    )
                    if member is not None and member.kind == "engine" and entry.change_type in ("method", "property")
                    else ""
                )
                if early:
                    facts.append(Fact(SIGNAL_NEUTRAL, 0.0, early + _rests_on(member), line, symbol=word, tier=-1))
                    break
                # The old name still callable in Godot 4 (a name there, or a property's setter) is weaker.
                strength = 0.6 if entry.old_in_godot4 or entry.old in vocab.accessor_names4 else 0.9
                facts.append(
                    Fact(
                        SIGNAL_GODOT3,
                        strength,
                        f"Godot 3 {entry.change_type} `{entry.old}` (renamed `{entry.new}` in Godot 4)" + _rests_on(member),
                        line,
                        entry.old,
                        entry.new,
                        entry.record_id,
                        symbol=word,
                    )
                )
                break
        for entry in index.by_new.get(word, ()):
            if not entry.enabled or entry.new_in_godot3 or entry.new == entry.old or entry.new in vocab.accessor_names3:
                # set_length() is GrooveJoint2D's setter in Godot 3 too: a name Godot 3 can call says nothing.
                continue
            if (
                entry.change_type in ("class", "builtin_type")
                and t.prev_char != "."
                and word not in declared
                and not ctx.project_name(word)
            ):
                best = _preferred_entry(index, word, vocab) or entry
                facts.append(
                    Fact(
                        SIGNAL_GODOT4,
                        0.85,
                        f"Godot 4 {best.change_type} `{best.new}` (was `{best.old}` in Godot 3)",
                        line,
                        basis_record_id=best.record_id,
                        symbol=word,
                    )
                )
                break
            if entry.change_type == "method" and t.next_char == "(" and not (word in declared and t.receiver in ("", "self")):
                facts.append(
                    Fact(
                        SIGNAL_GODOT4,
                        0.7,
                        f"Godot 4 method `{entry.new}` (was `{entry.old}` in Godot 3)",
                        line,
                        basis_record_id=entry.record_id,
                        symbol=word,
                    )
                )
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
    return (
        bool(r)
        and r[0].isupper()
        and r not in ("$node",)
        and not vocab.is_engine_class(r)
        and bool(vocab.classes3 or vocab.classes4)
    )


def _rename_applies(entry: RenameEntry, t: _Token, declared: frozenset[str]) -> bool:
    ct = entry.change_type
    own = t.word in declared
    if ct in ("class", "builtin_type"):
        if entry.old_in_godot4 and (t.next_char == "." or t.prev_char in (":", ">") or t.prev_word in ("as", "is")):
            # Godot 4 still has the class (Viewport, Light2D, Texture are base classes there): as a qualifier
            # (`Viewport.MSAA_4X`: the member decides) or a type (`var vp: Viewport = get_viewport()`, `-> Texture`)
            # the name is valid in both versions; a node or script of that type (`extends Viewport`) is Godot 3's.
            return False
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
_SHAPE_WORDS = frozenset(
    {
        "emit",
        "instantiate",
        "instance",
        "connect",
        "disconnect",
        "is_connected",
        "move_and_slide",
        "move_and_slide_with_snap",
        "intersect_ray",
        "tween_callback",
        "yield",
        "call",
        "call_deferred",
        "rpc",
        "rpc_id",
    }
)
# Builtin containers: `x.empty()` on an untyped receiver is almost always one of these.
_CONTAINERS3 = (
    "Array",
    "Dictionary",
    "String",
    "PoolStringArray",
    "PoolIntArray",
    "PoolRealArray",
    "PoolByteArray",
    "PoolVector2Array",
    "PoolVector3Array",
    "PoolColorArray",
)
_CONTAINERS4 = (
    "Array",
    "Dictionary",
    "String",
    "PackedStringArray",
    "PackedInt32Array",
    "PackedFloat32Array",
    "PackedByteArray",
    "PackedVector2Array",
    "PackedVector3Array",
    "PackedColorArray",
)
_EXTENDS_RE = re.compile(r"^[ \t]*extends[ \t]+([A-Za-z_]\w*)[ \t]*$", re.M)
_LOCAL_RE = re.compile(r"\b(?:var|const|for)[ \t]+([A-Za-z_]\w*)")
# Parameters of a function or a signal declaration: names the code declares, not engine members.
_PARAMS_SCAN = _HeadParenScan(r"^[ \t]*(?:static[ \t]+)?(?:func|signal)[ \t]+\w+[ \t]*\(", "", re.M)


def _script_base(chunk: Chunk, index: RenameIndex, engine_base: str = "") -> tuple[str, str]:
    """The class the chunk's script extends, as named in Godot 3 and in Godot 4 ("" when unknown).

    ``engine_base`` is where the project index says the script's extends chain
    ends (through project scripts); without it, the chunk's own ``extends`` line.
    """
    return _class_pair(engine_base or _extends_name(chunk), index)


def _extends_name(chunk: Chunk) -> str:
    """The class name on the chunk's script's ``extends`` line ("" when none, or a path)."""
    m = _EXTENDS_RE.search(chunk.surrounding_context) or _EXTENDS_RE.search(chunk.code_mask or chunk.code_text)
    return m.group(1) if m else ""


def _class_pair(base: str, index: RenameIndex) -> tuple[str, str]:
    """An engine class as named in Godot 3 and in Godot 4 (through the class renames; "" where unknown)."""
    vocab = index.vocabulary
    if not base:
        return "", ""
    base3 = base if base in vocab.members3 else ""
    base4 = base if base in vocab.members4 else ""
    if not base4:
        renamed = [e.new for e in index.by_old.get(base, ()) if e.enabled and e.change_type in ("class", "builtin_type")]
        base4 = next((n for n in renamed if n in vocab.members4), "")
    if not base3:
        entry = _preferred_entry(index, base, vocab)
        base3 = entry.old if entry and entry.old in vocab.members3 else ""
    return base3, base4


def _local_names(mask: str) -> frozenset[str]:
    names = set(_LOCAL_RE.findall(mask))
    for _, params in _PARAMS_SCAN.matches(mask):
        for p in params.split(","):
            m = re.match(r"\s*([A-Za-z_]\w*)", p)
            if m:
                names.add(m.group(1))
    return frozenset(names)


def _vocabulary_facts(
    chunk: Chunk, tokens: list[_Token], index: RenameIndex, declared: frozenset[str], ctx: _Context
) -> list[Fact]:
    """Names that exist in one version's class reference only."""
    vocab = index.vocabulary
    if not (vocab.classes3 or vocab.classes4):
        return []
    mask = chunk.code_mask or chunk.code_text
    base3, base4 = _script_base(chunk, index, ctx.self_engine)
    inherited3 = vocab.members3.get(base3, frozenset())
    inherited4 = vocab.members4.get(base4, frozenset())
    locals_ = _local_names(mask)
    project_objects = _project_objects(tokens, vocab)
    extends = _extends_name(chunk)
    project_base = extends if extends and not (base3 or base4) and not vocab.is_engine_class(extends) else ""
    facts: list[Fact] = []
    seen: set[tuple[str, int]] = set()

    def add(
        signal: str, strength: float, what: str, t: _Token, old: str = "", new: str = "", basis: str = "", tier: int = 1
    ) -> None:
        line = _line_of(chunk, t.start)
        if (t.word, line) in seen:
            return
        seen.add((t.word, line))
        facts.append(Fact(signal, strength, what, line, old, new, basis, symbol=t.word, tier=tier))

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
            if w in locals_ or ctx.project_name(w):
                continue
            if w[0].isupper() and not w.isupper():
                if w in vocab.classes3 and w not in vocab.classes4 and w not in vocab.singletons4:
                    new, basis = _class_replacement(index, w)
                    add(SIGNAL_GODOT3, 0.85, f"Godot 3 class `{w}` (not in Godot 4)", t, w, new, basis)
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
                if in3 and not in4 and (early := _early_godot4_name(vocab, "", base3, base4, w)):
                    add(SIGNAL_NEUTRAL, 0.0, early, t)
                elif in3 and not in4:
                    new, basis = _replacement(index, base3, base4, w)
                    via = (
                        f" [self: extends {ctx.self_engine} through the project's scripts]"
                        if ctx.self_engine and not _EXTENDS_RE.search(chunk.surrounding_context)
                        else ""
                    )
                    add(SIGNAL_GODOT3, 0.8, f"Godot 3 {kind} `{w}` of {base3} (not in Godot 4's {base4}){via}", t, w, new, basis)
                elif in4 and not in3:
                    add(SIGNAL_GODOT4, 0.8, f"Godot 4 {kind} `{w}` of {base4} (not in Godot 3's {base3})", t)
            elif t.next_char == "(":
                _member_name_fact(add, t, vocab)
            continue
        if t.receiver == "self" and inherited3 and inherited4:
            # self.name: a member of the script's own base class, as when called bare.
            in3, in4 = w in inherited3, w in inherited4
            if in3 and not in4 and (early := _early_godot4_name(vocab, "", base3, base4, w)):
                add(SIGNAL_NEUTRAL, 0.0, early + " [self]", t)
            elif in3 and not in4:
                new, basis = _replacement(index, base3, base4, w)
                add(SIGNAL_GODOT3, 0.8, f"Godot 3 member `{w}` of {base3} (not in Godot 4's {base4}) [self]", t, w, new, basis)
            elif in4 and not in3:
                add(SIGNAL_GODOT4, 0.8, f"Godot 4 member `{w}` of {base4} (not in Godot 3's {base3}) [self]", t)
            if in3 or in4 or _accessor_of(w, inherited3 | inherited4):
                continue
        member = ctx.member(t) if t.receiver != "self" else None
        if member is not None and member.kind == "project":
            continue  # the project's own member, whatever engine name it shares
        r = t.receiver
        qualified = f"{r}.{w}" if r and r[0].isupper() and r != "$node" and vocab.is_engine_class(r) else ""
        if member is not None and member.kind == "engine":
            c3, c4 = _member_classes(member, index)
            if c3 and c4:
                in3 = w in vocab.members3.get(c3, frozenset())
                in4 = w in vocab.members4.get(c4, frozenset())
                rests = f" [{member.basis}]" if member.basis and not qualified else ""
                if in3 and not in4 and (early := _early_godot4_name(vocab, member.engine, c3, c4, w)):
                    add(SIGNAL_NEUTRAL, 0.0, early + rests, t)
                elif in3 and not in4:
                    new, basis = _replacement(index, c3, c4, w, qualified)
                    add(
                        SIGNAL_GODOT3,
                        0.85,
                        f"Godot 3 member `{c3}.{w}` (not in Godot 4's {c4}){rests}",
                        t,
                        qualified or w,
                        new,
                        basis,
                    )
                elif in4 and not in3:
                    add(SIGNAL_GODOT4, 0.85, f"Godot 4 member `{c4}.{w}` (not in Godot 3's {c3}){rests}", t)
                if in3 or in4 or _accessor_of(w, vocab.members3.get(c3, frozenset()) | vocab.members4.get(c4, frozenset())):
                    continue  # set_name() of a Node: the setter of a property the class has
                if _value_type(c3, vocab) or _value_type(c4, vocab):
                    continue  # `saved.error` on a Dictionary is a key; a value type has no subclass to have the member
                if not qualified and w in ctx.scope.project_names:
                    # `var gun: Node2D` then `gun.init()`: the object is a subclass, and the project's scripts
                    # declare an `init`: that is the method called, not a Godot 3 class's.
                    ctx.set_aside(w, f"receiver `{r or '?'}` is typed {c4 or c3}, which has no `{w}`; the project defines one")
                    continue
                # Neither version's class has it: the object is a subclass of the declared
                # type (`event: InputEvent` that is an InputEventKey); the name alone decides.
        if r and r[0].isupper() and r not in ("$node",):
            # Class-qualified: Engine.editor_hint, OS.get_ticks_msec(), JSON.print().
            if vocab.is_engine_class(r):
                in3 = w in vocab.members3.get(r, frozenset())
                in4 = w in vocab.members4.get(r, frozenset())
                both_known = (r in vocab.members3 or r in vocab.singletons3) and (r in vocab.members4 or r in vocab.singletons4)
                if both_known and in3 and not in4:
                    add(
                        SIGNAL_GODOT3,
                        0.85,
                        f"Godot 3 member `{r}.{w}` (not in Godot 4)",
                        t,
                        f"{r}.{w}",
                        _G3_REPLACEMENTS.get(f"{r}.{w}", ""),
                    )
                elif both_known and in4 and not in3:
                    add(SIGNAL_GODOT4, 0.85, f"Godot 4 member `{r}.{w}` (not in Godot 3)", t)
            continue
        if t.receiver == "self" and project_base and t.next_char != "(":
            # `self.attributes` in a script that extends the project's `ServerActor`, whose file the judge does not
            # see (a snippet, a partial project): the property is most likely that class's. A call
            # (`self.queue_redraw()`) still counts: on the public projects, calls by name alone were never wrong.
            if _is_member_name_evidence(t, vocab, member):
                add(SIGNAL_NEUTRAL, 0.0, f"`self.{w}`: the script extends `{project_base}`, the project's class", t)
            continue
        if t.next_char != "(" and (shown := project_objects.get(t.receiver)):
            # A property of an object the chunk also reads a non-engine name of (`options.panel_options`, `cfg.font_size`).
            if _is_member_name_evidence(t, vocab, member):
                add(SIGNAL_NEUTRAL, 0.0, f"`{t.receiver}.{w}`: `{t.receiver}` is the project's object or a dictionary ({shown})", t)
            continue
        if not _member_name_fact(add, t, vocab, member) and t.next_char == "(":
            box3 = any(w in vocab.members3.get(k, ()) for k in _CONTAINERS3)
            box4 = any(w in vocab.members4.get(k, ()) for k in _CONTAINERS4)
            if box3 and not box4:
                add(
                    SIGNAL_GODOT3,
                    0.75,
                    f"Godot 3 Array/Dictionary/String method `{w}()` (renamed in Godot 4)",
                    t,
                    w,
                    _G3_REPLACEMENTS.get(w, ""),
                    tier=0,
                )
            elif box4 and not box3:
                add(SIGNAL_GODOT4, 0.75, f"Godot 4 Array/Dictionary/String method `{w}()` (not in Godot 3)", t, tier=0)
    return facts


def _value_type(klass: str, vocab: EngineVocabulary) -> bool:
    """A built-in value type (Dictionary, Array, String, Vector2): no parent class, and not Object itself."""
    return (
        bool(klass)
        and klass != "Object"
        and (klass in vocab.members3 or klass in vocab.members4)
        and klass not in vocab.parents3
        and klass not in vocab.parents4
    )


# One-word names one version's reference has and the other's lacks, which the scripts of 43 public projects declare
# themselves (`var speed` in 16 of them; `func init`, `func spawn`, `func next`): on an object the judge cannot
# name, or bare from a base it cannot see, the project's own member is the likelier one, and a snippet or a partial
# project does not hold its declaration. Idioms the engine owns (`instance`, `emit`, `resume`, `empty`,
# `collider`) are not among them.
_PROJECT_WORDS = frozenset(
    {
        # Godot 3 only
        "base", "button", "character", "command", "control", "group", "init", "input", "process", "speed",
        "weight", "world",
        # Godot 4 only
        "client", "debug", "destroy", "frequency", "hand", "host", "layout", "next", "outline", "ping",
        "progress", "spawn",
    }
)  # fmt: skip


def _project_objects(tokens: list[_Token], vocab: EngineVocabulary) -> dict[str, str]:
    """Receivers the chunk itself shows to be the project's objects or dictionaries, with what shows it: one it
    reads a member of that no engine class has (`options.panel_options`), and such a member used as a receiver
    in turn (`options.panel_options.font_name`). A property name alone on them is no evidence (GUT's settings
    dictionaries read `font_name`, `font_size` and `resolution`, which only Godot 4 classes have)."""
    out: dict[str, str] = {}
    for u in tokens:
        w = u.word
        if u.prev_char != "." or w in _KEYWORDS or vocab.engine_name(w) or w in vocab.accessor_names3 or w in vocab.accessor_names4:
            continue
        if u.receiver and u.receiver not in ("self", "?", ")", "]", "$node"):
            out.setdefault(u.receiver, f"it has `{w}`, which no engine class has")
        out.setdefault(w, f"`{w}`, which no engine class has")
    return out


def _is_member_name_evidence(t: _Token, vocab: EngineVocabulary, member: _Member | None) -> bool:
    """Would ``_member_name_fact`` count ``t`` (its facts dropped): to say why a name it would count is set aside."""
    return _member_name_fact(lambda *_args, **_kwargs: None, t, vocab, member)


def _project_word(w: str) -> bool:
    """One of ``_PROJECT_WORDS``, or its accessor (`get_speed`, `set_speed`, `is_input`)."""
    if w in _PROJECT_WORDS:
        return True
    head, _, stem = w.partition("_")
    return head in ("get", "set", "is") and stem in _PROJECT_WORDS


def _member_name_fact(add, t: _Token, vocab: EngineVocabulary, member: _Member | None = None) -> bool:
    """`obj.name` / a bare call whose name one version's whole reference lacks (the receiver is not known)."""
    w = t.word
    if len(w) < 4:
        return False
    if w.startswith("_"):
        # The references' underscore names are virtual methods (1,356 in Godot 4's, 120 in Godot 3's), which the
        # engine calls and scripts override. A script calling one on an object it cannot name, or bare from a base
        # it cannot see, calls a project's own helper: `weapon._reload()`, `_save()`, `player._start()`.
        return False
    if w in _PROJECT_WORDS:
        return False
    # A name one version declares and the other has only as a property accessor exists in both
    # (Node.set_name); a name one version has only as an accessor is too weak to count alone.
    in3 = w in vocab.member_names3 or w in vocab.globals3
    in4 = w in vocab.member_names4 or w in vocab.globals4
    if (in3 and w in vocab.accessor_names4) or (in4 and w in vocab.accessor_names3):
        return False
    if (in3 and w in vocab.editor_only3) or (in4 and w in vocab.editor_only4):
        return False  # only an editor class has it; the receiver is unknown
    call = t.next_char == "("
    rests = _rests_on(member)
    if in3 and not in4 and (later := later_godot4_names().get(w)):
        add(SIGNAL_NEUTRAL, 0.0, f"`{w}`: a name early Godot 4 had as well ({later}){rests}", t)
        return True
    if in3 and not in4:
        new, basis = _G3_REPLACEMENTS.get(w, ""), ""
        if not new:
            changed = shipped_member_changes_by_name().get(w)
            new, basis = changed if changed else ("", "")
        add(
            SIGNAL_GODOT3, 0.75 if call else 0.7, f"Godot 3 member `{w}` (no Godot 4 class has it){rests}", t, w, new, basis, tier=0
        )
        return True
    if in4 and not in3:
        add(SIGNAL_GODOT4, 0.75 if call else 0.7, f"Godot 4 member `{w}` (no Godot 3 class has it){rests}", t, tier=0)
        return True
    return False


def _accessor_of(w: str, members: frozenset[str]) -> bool:
    """``set_x`` / ``get_x`` / ``is_x`` of a property ``x`` in ``members`` (the references list properties, not their accessors)."""
    for prefix in ("set_", "get_", "is_"):
        if w.startswith(prefix) and w[len(prefix) :] in members:
            return True
    return False


REMOVED_IN_GODOT4 = "(not in Godot 4; no replacement recorded)"
# OS members that Godot 4 moved to DisplayServer, by how the name is rewritten
# (set_window_title -> window_set_title, get_screen_size -> screen_get_size).
_DISPLAY_SERVER_PREFIXES = (
    ("set_window_", "window_set_"),
    ("get_window_", "window_get_"),
    ("window_", "window_get_"),
    ("get_screen_", "screen_get_"),
    ("set_screen_", "screen_set_"),
    ("", ""),
)


def _replacement(index: RenameIndex, c3: str, c4: str, w: str, qualified: str = "") -> tuple[str, str]:
    """(new form, basis record) for Godot 3 member ``w`` of ``c3`` that Godot 4's ``c4`` lacks.

    In order: the authored member changes (migration guide), a rename pair whose
    new name ``c4`` really has, OS members that moved to DisplayServer; otherwise
    the member was removed, and the note cites its class-reference record
    without inventing a replacement.
    """
    vocab = index.vocabulary
    changes = shipped_member_changes()
    k: str | None = c3
    for _ in range(64):
        if not k:
            break
        if (k, w) in changes:
            if qualified in _G3_REPLACEMENTS:  # the exact call form, resting on the change record
                return _G3_REPLACEMENTS[qualified], changes[(k, w)][1]
            return changes[(k, w)]
        k = vocab.parents3.get(k)
    decl = vocab.declaring_class("3", c3, w) or c3
    record = vocab.records3.get((decl, w), "")
    if qualified in _G3_REPLACEMENTS:
        return _G3_REPLACEMENTS[qualified], record
    for entry in index.by_old.get(w, ()):
        if entry.change_type in ("method", "property") and entry.new in vocab.members4.get(c4, ()):
            return entry.new, entry.record_id
    if c3 == "OS":
        ds = vocab.members4.get("DisplayServer", frozenset())
        for old_prefix, new_prefix in _DISPLAY_SERVER_PREFIXES:
            if w.startswith(old_prefix) and new_prefix + w[len(old_prefix) :] in ds:
                return f"DisplayServer.{new_prefix + w[len(old_prefix) :]}", vocab.records3.get(("OS", w), "")
    if w in _G3_REPLACEMENTS:
        return _G3_REPLACEMENTS[w], record
    # A change the migration guide describes for one class only (Transform2D.xform -> transform * v)
    # holds for the same member of a sibling class (Transform.xform).
    by_name = shipped_member_changes_by_name().get(w)
    if by_name:
        return by_name
    return (REMOVED_IN_GODOT4, record) if record else ("", "")


def _class_replacement(index: RenameIndex, klass: str) -> tuple[str, str]:
    """(new form, basis) for a Godot 3 class Godot 4 lacks that no rename pair covers.

    The authored change for the class (``YSort (node) -> Node2D.y_sort_enabled``), the
    known replacement, or else a note citing the class's 3.6 record with no replacement.
    """
    change = shipped_class_changes().get(klass)
    record = index.vocabulary.records3.get((klass, ""), "")
    if klass in _G3_REPLACEMENTS:
        return _G3_REPLACEMENTS[klass], change[1] if change else record
    if change:
        return change
    return (REMOVED_IN_GODOT4, record) if record else ("", "")


@lru_cache(maxsize=1)
def shipped_class_changes() -> dict[str, tuple[str, str]]:
    """Godot 3 class -> (new form, record id) from the authored class changes (kb_data/api_mapping_extra.jsonl)."""
    from godot_rag.domain.retrieval.knowledge import read_jsonl

    out: dict[str, tuple[str, str]] = {}
    for row in read_jsonl("api_mapping_extra.jsonl"):
        if row.get("change_type") != "class":
            continue
        olds = [o.strip() for o in str(row.get("old_symbol", "")).split(",")]
        news = [n.strip() for n in str(row.get("new_symbol", "")).split(",")]
        for i, old in enumerate(olds):
            name, end = read_ident(old, 0)
            rest = old[end:].lstrip()
            if name[:1].isupper() and (not rest or rest.startswith("(")) and "." not in old:
                new = news[i] if len(news) == len(olds) else str(row.get("new_symbol", ""))
                out.setdefault(name, (new[:200], f"change:{row['id']}"))
    return out


@lru_cache(maxsize=1)
def shipped_member_changes() -> dict[tuple[str, str], tuple[str, str]]:
    """(Godot 3 class, member) -> (new form, record id) from the authored changes (kb_data/api_mapping_extra.jsonl).

    ``Control.rect_position / rect_size -> Control.position / size`` pairs
    member by member; a member's class is the first one named on its side.
    """
    from godot_rag.domain.retrieval.knowledge import read_jsonl

    out: dict[tuple[str, str], tuple[str, str]] = {}
    for row in read_jsonl("api_mapping_extra.jsonl"):
        if row.get("change_type") not in ("method", "property", "behaviour", "signal", "constant"):
            continue
        olds = [o.strip() for o in str(row.get("old_symbol", "")).split(" / ")]
        news = [n.strip() for n in str(row.get("new_symbol", "")).split(" / ")]
        klass = ""
        for i, old in enumerate(olds):
            first, j = read_ident(old, 0)
            member = ""
            if j < len(old) and old[j] == "." and first[:1].isupper():
                klass = first
                member, _ = read_ident(old, j + 1)
            elif klass and first:
                member = first
            if not (klass and member):
                continue
            new = news[i] if len(news) == len(olds) else str(row.get("new_symbol", ""))
            out.setdefault((klass, member), (new[:200], f"change:{row['id']}"))
    return out


# The Godot 4.x upgrade guides shipped with the knowledge base (godot-docs, CC BY 3.0): each names the members
# a release removed or renamed, which the Godot 4.4 class reference no longer lists.
LATER_GODOT4_GUIDES = tuple(f"docs/4.x/tutorials/migrating/upgrading_to_godot_4.{minor}.rst" for minor in (1, 2, 3, 4))
_GUIDE_CLASS_RE = re.compile(r"^\*\*([A-Za-z_]\w*)\*\*\s*$")
_GUIDE_ROW_RE = re.compile(r"^(Method|Property|Signal|Constant|Theme item)\s+``([A-Za-z_]\w*)``\s+(.+?)\s{2,}\|")


def later_godot4_changes_of(pages: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(class, member) -> what a Godot 4.x upgrade guide says happened to it (``removed in Godot 4.1``), from
    ``(version, page text)`` pairs: a ``**Class**`` line heads the rows of its class."""
    out: dict[tuple[str, str], str] = {}
    for version, text in pages:
        klass = ""
        for line in text.splitlines():
            if m := _GUIDE_CLASS_RE.match(line):
                klass = m.group(1)
            elif line.startswith("Change "):
                klass = ""  # a new table's header: its rows wait for their class line
            elif klass and (m := _GUIDE_ROW_RE.match(line)):
                change = re.sub(r"\s+", " ", m.group(3).replace("``", "`")).strip()
                out.setdefault((klass, m.group(2)), f"{change} in Godot {version}")
    return out


@lru_cache(maxsize=1)
def later_godot4_changes() -> dict[tuple[str, str], str]:
    """The shipped guides' changes (``later_godot4_changes_of``): names Godot 4.0 to 4.3 had, gone in 4.4."""
    from godot_rag.domain.retrieval.knowledge import read_text

    return later_godot4_changes_of((path.rsplit("_", 1)[1].removesuffix(".rst"), read_text(path)) for path in LATER_GODOT4_GUIDES)


@lru_cache(maxsize=1)
def later_godot4_names() -> dict[str, str]:
    """Member name -> `Class.member` and its change, of the first class a guide names it for."""
    out: dict[str, str] = {}
    for (klass, member), change in later_godot4_changes().items():
        out.setdefault(member, f"`{klass}.{member}` {change}")
    return out


def later_godot4_change(vocab: EngineVocabulary, klass4: str, member: str) -> str:
    """What happened to ``klass4.member`` after Godot 4.0 ("" when no guide names it), looked up along the
    class's Godot 4 ancestors (a guide names the declaring class: AnimationPlayer for a typed AnimationPlayer)."""
    changes = later_godot4_changes()
    k: str | None = klass4
    for _ in range(64):
        if not k:
            return ""
        if (k, member) in changes:
            return changes[(k, member)]
        k = vocab.parents4.get(k)
    return ""


@lru_cache(maxsize=1)
def shipped_change_ids() -> frozenset[str]:
    """Ids of the authored api_mapping changes (``change:super-call``...), which rules notes may cite."""
    from godot_rag.domain.retrieval.knowledge import read_jsonl

    return frozenset(f"change:{row['id']}" for row in read_jsonl("api_mapping_extra.jsonl") if row.get("id"))


@lru_cache(maxsize=1)
def shipped_member_changes_by_name() -> dict[str, tuple[str, str]]:
    """Member name -> (new form, record) for the names that only one authored change names."""
    seen: dict[str, list[tuple[str, str]]] = {}
    for (_, member), value in shipped_member_changes().items():
        seen.setdefault(member, []).append(value)
    return {m: v[0] for m, v in seen.items() if len(v) == 1}


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


# File names that say a version: native libraries (the engine types they are) and shader files.
# (suffix, signal, strength, what, old, new, kind)
_FILE_NAME_FACTS = (
    (
        ".gdnlib",
        SIGNAL_GODOT3,
        0.9,
        "GDNative library (.gdnlib): Godot 4 has no GDNative; its native code is rebuilt as a GDExtension",
        "GDNativeLibrary",
        "GDExtension",
        KIND_REMOVED_TYPE,
    ),
    (
        ".gdextension",
        SIGNAL_GODOT4,
        0.95,
        "GDExtension library (.gdextension): Godot 4 only; Godot 3 used GDNative (.gdnlib)",
        "",
        "",
        KIND_REMOVED_TYPE,
    ),
    (
        ".shader",
        SIGNAL_GODOT3,
        0.6,
        ".shader file (Godot 3; Godot 4 loads shaders from .gdshader files only)",
        ".shader",
        ".gdshader",
        KIND_FILE_FORMAT,
    ),
    (
        ".gdshader",
        SIGNAL_GODOT4,
        0.8,
        ".gdshader file (Godot 4; Godot 3 loads shaders from .shader files only)",
        "",
        "",
        KIND_FILE_FORMAT,
    ),
    (".gdshaderinc", SIGNAL_GODOT4, 0.8, ".gdshaderinc file (a Godot 4 shader include)", "", "", KIND_FILE_FORMAT),
)


# A C# project file's Godot SDK: (pattern, signal, strength, what). Godot 3.0-3.2 generated projects that
# referenced the GodotSharp assemblies; 3.3 and later, and 4, name a Godot.NET.Sdk version.
_CSPROJ_SDK = (
    (re.compile(r'Sdk="Godot\.NET\.Sdk/3\.'), SIGNAL_GODOT3, 0.95, "C# project on Godot.NET.Sdk 3.x (Godot 3; Godot 4 needs 4.x)"),
    (
        re.compile(r'<Reference Include="GodotSharp"|\.mono[/\\]assemblies'),
        SIGNAL_GODOT3,
        0.9,
        "C# project referencing the GodotSharp assemblies in .mono/ (Godot 3.0-3.2; Godot 4 needs Godot.NET.Sdk 4.x)",
    ),
    (re.compile(r'Sdk="Godot\.NET\.Sdk/4\.'), SIGNAL_GODOT4, 0.95, "C# project on Godot.NET.Sdk 4.x (Godot 4)"),
)


def csproj_sdk(text: str) -> tuple[str, float, str, int] | None:
    """What a .csproj's Godot SDK says: (signal, strength, what, offset of the SDK), None when it names none."""
    for pattern, signal, strength, what in _CSPROJ_SDK:
        m = pattern.search(text)
        if m is not None:
            return signal, strength, what, m.start()
    return None


def _csproj_facts(chunk: Chunk, text: str) -> list[Fact]:
    """What a .csproj's Godot SDK says (once per file: the SDK is named at its top)."""
    sdk = csproj_sdk(text)
    if sdk is None:
        return []
    signal, strength, what, at = sdk
    return [Fact(signal, strength, what, _line_of(chunk, at), kind=KIND_REMOVED_TYPE)]


def direct_facts(chunk: Chunk, source_kind: str, index: RenameIndex, declared_names: frozenset[str] = frozenset()) -> list[Fact]:
    """Facts of a project.godot, scene, resource, .import or .uid chunk, each with its kind.

    The file format (format=2, numeric ids, ``ExtResource( 1 )``, the import
    cache) says which editor last saved a file; Godot 4 loads Godot 3's
    format and rewrites it on save, so it is KIND_FILE_FORMAT, never a type or
    API fact. A node or resource type one version's class reference lacks is
    KIND_REMOVED_TYPE: that version cannot instantiate it.
    """
    text = chunk.code_mask or chunk.code_text
    facts: list[Fact] = []
    if chunk.chunk_order == 1:
        # What a file's name says, once per file (on its first chunk).
        path = chunk.chunk_id.split(":", 1)[0]
        facts.extend(
            Fact(signal, strength, what, chunk.span.start_line, old, new, kind=kind)
            for suffix, signal, strength, what, old, new, kind in _FILE_NAME_FACTS
            if path.endswith(suffix)
        )
        if path.endswith(".csproj"):
            facts.extend(_csproj_facts(chunk, text))
        if path == "engine.cfg":
            # At the project's root only: another engine.cfg is any addon's settings file.
            facts.append(
                Fact(
                    SIGNAL_GODOT3,
                    0.9,
                    "engine.cfg: the project file of Godot 2 and earlier (Godot 3 and 4 open project.godot)",
                    chunk.span.start_line,
                    kind=KIND_GODOT2,
                )
            )

    def add(pattern: str, signal: str, strength: float, what: str, kind: str, flags: int = re.M) -> None:
        for m in re.finditer(pattern, text, flags):
            facts.append(Fact(signal, strength, what, _line_of(chunk, m.start()), kind=kind))

    if source_kind == "project_config":
        add(r"^config_version[ \t]*=[ \t]*[34]\b", SIGNAL_GODOT3, 0.99, "config_version 3/4 (Godot 3 project file)", KIND_CONFIG)
        add(r"^config_version[ \t]*=[ \t]*5\b", SIGNAL_GODOT4, 0.99, "config_version=5 (Godot 4 project file)", KIND_CONFIG)
        add(
            r"^config/features[ \t]*=[ \t]*PackedStringArray\([^)\n]*\"4\.\d",
            SIGNAL_GODOT4,
            0.99,
            "config/features names Godot 4.x",
            KIND_CONFIG,
        )
        add(r"PoolStringArray\(", SIGNAL_GODOT3, 0.9, "PoolStringArray value (Godot 3 project file format)", KIND_FILE_FORMAT)
        add(
            # config/features is a version line of its own (above), not a value's format.
            r"^(?!config/features\b)[^\n=]*=[^\n]*?(?<![\w\"])Packed(?:String|Int32|Float32|Byte|Color|Vector2)Array\(",
            SIGNAL_GODOT4,
            0.9,
            "Packed*Array value (Godot 4 project file format; Godot 3 writes Pool*Array)",
            KIND_FILE_FORMAT,
        )
        add(r"\"scancode\"|\"physical_scancode\"", SIGNAL_GODOT3, 0.85, "input event scancode (keycode in Godot 4)", KIND_API)
        add(r"\"physical_keycode\"|\"keycode\"", SIGNAL_GODOT4, 0.85, "input event keycode (Godot 4)", KIND_API)
    elif source_kind in ("scene", "resource"):
        add(
            r"^\[gd_(scene|resource)[^\]\n]*\bformat=1\b",
            SIGNAL_GODOT3,
            0.7,
            "scene/resource format=1 (saved by Godot 2: its node and property names predate Godot 3)",
            KIND_GODOT2,
        )
        add(
            r"^\[gd_(scene|resource)[^\]\n]*\bformat=2\b",
            SIGNAL_GODOT3,
            0.6,
            "scene/resource format=2 (saved by Godot 3; Godot 4 loads it and re-saving converts it)",
            KIND_FILE_FORMAT,
        )
        add(
            r"^\[gd_(scene|resource)[^\]\n]*\bformat=[34]\b",
            SIGNAL_GODOT4,
            0.95,
            "scene/resource format=3/4 (saved by Godot 4; Godot 3 cannot load it)",
            KIND_FILE_FORMAT,
        )
        add(r"\buid=\"uid://", SIGNAL_GODOT4, 0.8, "uid:// resource id (Godot 4 file format)", KIND_FILE_FORMAT)
        add(
            r"\bPool(?:Int|Real|String|Byte|Vector2|Vector3|Color)Array\(",
            SIGNAL_GODOT3,
            0.7,
            "Pool*Array value (Godot 3 file format; Godot 4 writes Packed*Array)",
            KIND_FILE_FORMAT,
        )
        add(
            r"\bPacked(?:Int32|Int64|Float32|Float64|String|Byte|Vector2|Vector3|Vector4|Color)Array\(",
            SIGNAL_GODOT4,
            0.8,
            "Packed*Array value (Godot 4 file format)",
            KIND_FILE_FORMAT,
        )
        add(
            r"^\[ext_resource[^\]\n]*\bid=\d+\b",
            SIGNAL_GODOT3,
            0.7,
            "numeric ext_resource id (Godot 3 file format)",
            KIND_FILE_FORMAT,
        )
        add(
            r"(Ext|Sub)Resource\([ \t]+\d+[ \t]+\)",
            SIGNAL_GODOT3,
            0.7,
            "ExtResource( 1 ) reference (Godot 3 file format)",
            KIND_FILE_FORMAT,
        )
        add(
            r"(Ext|Sub)Resource\(\"[^\"]+\"\)",
            SIGNAL_GODOT4,
            0.8,
            'ExtResource("id") reference (Godot 4 file format)',
            KIND_FILE_FORMAT,
        )
        for m in re.finditer(r"\btype=\"([A-Za-z0-9_]+)\"", text):
            facts.extend(_type_facts(chunk, m.group(1), m.start(1), index))
        facts.extend(_property_facts(chunk, text, index))
        # A built-in shader: its code is the string value of `code = "..."` in a Shader resource.
        for at, code in embedded_shaders(chunk.code_text):
            facts.extend(shader_facts(chunk, code, at, index))
        # A built-in script: its code is the string value of `script/source = "..."` in a GDScript resource.
        for at, source in embedded_scripts(chunk.code_text):
            facts.extend(builtin_script_facts(chunk, source, at, index))
    elif source_kind == "import_meta":
        # Import metadata is the editor's cache: each version re-imports from the
        # source asset, so everything in it is file format.
        add(
            r"res://\.import/",
            SIGNAL_GODOT3,
            0.85,
            "import cache under res://.import (Godot 3; Godot 4 re-imports)",
            KIND_FILE_FORMAT,
        )
        add(r"res://\.godot/imported/", SIGNAL_GODOT4, 0.85, "import cache under res://.godot/imported (Godot 4)", KIND_FILE_FORMAT)
        for m in re.finditer(r"\btype=\"([A-Za-z0-9_]+)\"", text):
            facts.extend(replace(f, kind=KIND_FILE_FORMAT) for f in _type_facts(chunk, m.group(1), m.start(1), index))
    elif source_kind == "uid":
        add(r"^uid://", SIGNAL_GODOT4, 0.9, ".uid sidecar file (Godot 4.4+; Godot 3 ignores it)", KIND_FILE_FORMAT)
    elif source_kind == "shader":
        facts.extend(shader_facts(chunk, chunk.code_text, 0, index, declared_names))
    return facts


# ---------------------------------------------------------------- shaders

# Shader built-ins Godot 4 removed without a rename: it reads the screen, depth and normal buffers
# through uniforms with these hints.
SHADER_G3_REMOVED = {
    "SCREEN_TEXTURE": "uniform sampler2D screen_texture : hint_screen_texture",
    "DEPTH_TEXTURE": "uniform sampler2D depth_texture : hint_depth_texture",
    "NORMAL_ROUGHNESS_TEXTURE": "uniform sampler2D normal_roughness_texture : hint_normal_roughness_texture",
}
# Shader language Godot 3's compiler does not know: the new names of the converter's shader renames,
# the buffer hints above, Godot 4's sampler filter and repeat hints, uniform groups and scopes.
_SHADER_G4_ONLY = frozenset(
    {
        "source_color",
        "hint_screen_texture",
        "hint_depth_texture",
        "hint_normal_roughness_texture",
        "hint_default_black",
        "hint_default_white",
        "hint_default_transparent",
        "hint_anisotropy",
        "MODEL_MATRIX",
        "MODEL_NORMAL_MATRIX",
        "INV_VIEW_MATRIX",
        "NORMAL_MAP",
        "NORMAL_MAP_DEPTH",
        "BACKLIGHT",
        "ALPHA_SCISSOR_THRESHOLD",
        "depth_prepass_alpha",
        "filter_nearest_mipmap",
        "filter_linear_mipmap",
        "filter_nearest_mipmap_anisotropic",
        "filter_linear_mipmap_anisotropic",
        "repeat_enable",
        "repeat_disable",
        "group_uniforms",
        "CANVAS_MATRIX",
    }
)
_SHADER_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHADER_G4_TYPES_RE = re.compile(r"\bshader_type[ \t]+(sky|fog)\b|\b(global|instance)[ \t]+uniform\b")
_SHADER_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
# The start of `code = "..."`, the source of a Shader resource in a scene or .tres.
_CODE_VALUE_RE = re.compile(r'^code[ \t]*=[ \t]*"', re.M)


def string_value_spans(opening: re.Pattern[str], text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the escaped text of every string value whose opening quote ``opening`` ends on; an
    unclosed one runs to the end of ``text``. One linear pass."""
    pos = 0
    while (m := opening.search(text, pos)) is not None:
        start = k = m.end()
        while k < len(text) and text[k] != '"':
            k += 2 if text[k] == "\\" else 1
        yield start, min(k, len(text))
        pos = k + 1


def embedded_shaders(text: str) -> Iterator[tuple[int, str]]:
    """(offset, source) of every `code = "..."` string in ``text`` that holds shader code; one linear pass."""
    for start, end in string_value_spans(_CODE_VALUE_RE, text):
        if "shader_type" in text[start:end]:
            yield start, text[start:end]


# The start of `script/source = "`, the source of a built-in GDScript in a scene or resource.
_SCRIPT_SOURCE_RE = re.compile(r'^script/source[ \t]*=[ \t]*"', re.M)
# The text format escapes a string's backslashes and double quotes, nothing else (newlines stay as they are).
_STRING_ESCAPE_RE = re.compile(r'\\([\\"])')


def builtin_script_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every built-in script's escaped source (`script/source = "..."`) in ``text``; one linear pass."""
    return string_value_spans(_SCRIPT_SOURCE_RE, text)


def unescape_string_value(raw: str) -> str:
    """A string value of the text format as the engine reads it (``\\\\`` and ``\\"``; line breaks stay)."""
    return _STRING_ESCAPE_RE.sub(r"\1", raw)


def embedded_scripts(text: str) -> Iterator[tuple[int, str]]:
    """(offset, source) of every built-in script in ``text``, unescaped. Unescaping keeps every line break,
    so a line of the source is a line of ``text`` from the offset's."""
    for start, end in builtin_script_spans(text):
        yield start, unescape_string_value(text[start:end])


def builtin_script_facts(chunk: Chunk, source: str, offset: int, index: RenameIndex) -> list[Fact]:
    """The facts of a built-in script (``source``, at ``offset`` in the chunk's text), read as the script
    file it would be: parsed and chunked by the GDScript chunker, each of its chunks under the GDScript rules,
    with the names it declares its own. Lines are the chunk's file's."""
    parsed = parse_gdscript("built-in.gd", source.encode("utf-8"))
    declared = declared_names(parsed.chunks)
    first = _line_of(chunk, offset) - 1
    facts: list[Fact] = []
    for part in parsed.chunks:
        for f in _gdscript_kinds(part, gdscript_facts(part, index, declared), index.vocabulary):
            if f.signal != SIGNAL_NEUTRAL:
                facts.append(replace(f, what=f"{f.what} (built-in script)", line=first + f.line))
    return facts


def shader_code_mask(code: str) -> str:
    """``code`` with its comments blanked (same length, same line breaks): what a shader rule may match."""
    return _SHADER_COMMENT_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), code)


# A uniform's name: the last name before its hint, default value, array size or the end of the statement.
_SHADER_UNIFORM_RE = re.compile(r"\buniform\b[^;{}]*?\b([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?=[:=;\[])")


def shader_declared_names(code: str) -> frozenset[str]:
    """The uniforms shader ``code`` declares (comments left out)."""
    if "uniform" not in code:
        return frozenset()
    return frozenset(m.group(1) for m in _SHADER_UNIFORM_RE.finditer(shader_code_mask(code)))


def shader_facts(
    chunk: Chunk, code: str, offset: int, index: RenameIndex, declared_names: frozenset[str] = frozenset()
) -> list[Fact]:
    """Godot shading language one version's compiler rejects, in ``code`` (at ``offset`` in the chunk's text).

    Renamed built-ins and hints (`hint_color`, `WORLD_MATRIX`, `NORMALMAP`) rest on the converter's shader
    renames; they are syntax: the other version's shader compiler refuses them. A name the shader declares
    itself (``declared_names``: the file's uniforms; those of ``code`` are added) is its own: a Godot 4
    shader that reads the screen through `uniform sampler2D SCREEN_TEXTURE : hint_screen_texture` (as
    Godot's converter writes it) uses no Godot 3 built-in.
    """
    mask = shader_code_mask(code)
    own = declared_names | shader_declared_names(code)
    facts: list[Fact] = []
    seen: set[tuple[str, int]] = set()

    def add(signal: str, what: str, at: int, word: str, old: str = "", new: str = "", basis: str = "") -> None:
        line = _line_of(chunk, offset + at)
        if (word, line) not in seen:
            seen.add((word, line))
            facts.append(Fact(signal, 0.85, what, line, old, new, basis, symbol=word, tier=2, kind=KIND_SYNTAX))

    for m in _SHADER_WORD_RE.finditer(mask):
        w = m.group()
        if w in own:
            continue
        renamed = next((e for e in index.by_old.get(w, ()) if e.enabled and e.change_type == "shader"), None)
        if renamed is not None:
            add(
                SIGNAL_GODOT3,
                f"Godot 3 shader `{w}` (renamed `{renamed.new}` in Godot 4)",
                m.start(),
                w,
                w,
                renamed.new,
                renamed.record_id,
            )
        elif w in SHADER_G3_REMOVED:
            add(
                SIGNAL_GODOT3,
                f"Godot 3 shader built-in `{w}` (Godot 4: a uniform with a hint)",
                m.start(),
                w,
                w,
                SHADER_G3_REMOVED[w],
            )
        elif w in _SHADER_G4_ONLY:
            add(SIGNAL_GODOT4, f"Godot 4 shader `{w}` (Godot 3's shader language has no such name)", m.start(), w)
    for m in _SHADER_G4_TYPES_RE.finditer(mask):
        add(SIGNAL_GODOT4, f"Godot 4 shader `{' '.join(m.group().split())}` (not in Godot 3)", m.start(), m.group())
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
        if "/" in pm.group(1) and (theme := _theme_override_fact(pm.group(1), line, index)) is not None:
            facts.append(theme)
            continue
        renamed = next((e for e in index.by_old.get(prop, ()) if e.enabled and e.change_type == "property"), None)
        if type3 and type4:
            in3, in4 = prop in vocab.members3[type3], prop in vocab.members4[type4]
            if in3 and not in4 and _early_godot4_name(vocab, "", type3, type4, prop):
                continue  # a property Godot 4.0 had as well (TileMap's cell_quadrant_size until 4.2): no evidence
            if in3 and not in4:
                facts.append(
                    Fact(
                        SIGNAL_GODOT3,
                        0.8,
                        f"Godot 3 property `{prop}` of {type3} (not in Godot 4's {type4})",
                        line,
                        prop,
                        renamed.new if renamed else "",
                        renamed.record_id if renamed else "",
                        kind=KIND_API,
                    )
                )
            elif in4 and not in3 and (vocab.declaring_class("4", type4, prop), prop) not in vocab.deprecated_properties4:
                # A deprecated Godot 4 property is kept for what older files hold: no sign of Godot 4.
                facts.append(
                    Fact(
                        SIGNAL_GODOT4, 0.8, f"Godot 4 property `{prop}` of {type4} (not in Godot 3's {type3})", line, kind=KIND_API
                    )
                )
        elif renamed and not renamed.old_in_godot4:
            facts.append(
                Fact(
                    SIGNAL_GODOT3,
                    0.8,
                    f"Godot 3 property `{prop}` (renamed `{renamed.new}`)",
                    line,
                    prop,
                    renamed.new,
                    renamed.record_id,
                    kind=KIND_API,
                )
            )
    return facts


def _theme_override_fact(key: str, line: int, index: RenameIndex) -> Fact | None:
    """A Control's theme override in a scene: `custom_colors/font_color` (Godot 3) was renamed
    `theme_override_colors/font_color` (Godot 4), by the converter's theme-override renames."""
    head = key.split("/", 1)[0] + "/"
    renamed = next((e for e in index.by_old.get(head, ()) if e.enabled and e.change_type == "theme"), None)
    if renamed is not None:
        what = f"Godot 3 theme override `{key}` (`{renamed.new}...` in Godot 4)"
        return Fact(SIGNAL_GODOT3, 0.8, what, line, head, renamed.new, renamed.record_id, kind=KIND_API)
    if head.startswith("theme_override_"):
        return Fact(SIGNAL_GODOT4, 0.8, f"Godot 4 theme override `{key}` (Godot 3: `custom_*`)", line, kind=KIND_API)
    return None


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
                return [
                    Fact(
                        SIGNAL_GODOT3,
                        0.85,
                        f"Godot 3 type `{type_name}` (not in Godot 4; renamed `{e.new}`)",
                        line,
                        type_name,
                        e.new,
                        e.record_id,
                        kind=KIND_REMOVED_TYPE,
                    )
                ]
            return [
                Fact(
                    SIGNAL_GODOT3,
                    0.85,
                    f"Godot 3 type `{type_name}` (removed in Godot 4)",
                    line,
                    type_name,
                    _G3_REPLACEMENTS.get(type_name, ""),
                    kind=KIND_REMOVED_TYPE,
                )
            ]
        if in4 and not in3:
            return [
                Fact(
                    SIGNAL_GODOT4,
                    0.85,
                    f"Godot 4 type `{type_name}` (not in Godot 3)",
                    line,
                    basis_record_id=_preferred_basis(index, type_name, vocab),
                    kind=KIND_REMOVED_TYPE,
                )
            ]
        return []
    # Without the class references (a bare rename index) the rename pairs are all there is.
    for entry in renamed:
        if not entry.old_in_godot4:
            return [
                Fact(
                    SIGNAL_GODOT3,
                    0.85,
                    f"Godot 3 type `{type_name}` (renamed `{entry.new}` in Godot 4)",
                    line,
                    type_name,
                    entry.new,
                    entry.record_id,
                    kind=KIND_REMOVED_TYPE,
                )
            ]
    for entry in index.by_new.get(type_name, ()):
        if entry.enabled and entry.change_type in ("class", "builtin_type") and not entry.new_in_godot3:
            return [
                Fact(
                    SIGNAL_GODOT4,
                    0.85,
                    f"Godot 4 type `{type_name}` (was `{entry.old}`)",
                    line,
                    basis_record_id=_preferred_basis(index, type_name, vocab),
                    kind=KIND_REMOVED_TYPE,
                )
            ]
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
    scope: FileScope | None = None,
) -> list[Fact]:
    if source_kind == "gdscript":
        facts = _gdscript_kinds(chunk, gdscript_facts(chunk, index, declared_names, hits, scope), index.vocabulary)
    else:
        facts = direct_facts(chunk, source_kind, index, declared_names)
    return [f for f in facts if f.signal != SIGNAL_NEUTRAL]


def judge_chunk(
    chunk: Chunk,
    source_kind: str,
    hits: Sequence[RetrievalHit],
    index: RenameIndex,
    declared_names: frozenset[str] = frozenset(),
    scope: FileScope | None = None,
) -> Judgment:
    """One chunk's judgment. ``scope`` is what the project index says the file's names are (None: no index)."""
    if source_kind == "gdscript":
        every = _gdscript_kinds(chunk, gdscript_facts(chunk, index, declared_names, hits, scope), index.vocabulary)
        facts = [f for f in every if f.signal != SIGNAL_NEUTRAL]
        set_aside = [f.what for f in every if f.signal == SIGNAL_NEUTRAL]
    else:
        facts, set_aside = chunk_facts(chunk, source_kind, index, declared_names, hits), []
    g3 = [f for f in facts if f.signal == SIGNAL_GODOT3]
    g4 = [f for f in facts if f.signal == SIGNAL_GODOT4]
    s3 = _combine(f.strength for f in g3)
    s4 = _combine(f.strength for f in g4)
    # Conflicting facts are ranked by kind (grammar and types over names over
    # the file format), then by how sure the reading of the name is.
    r3 = max(((_KIND_RANK.get(f.kind, 2), f.tier) for f in g3), default=(-1, -1))
    r4 = max(((_KIND_RANK.get(f.kind, 2), f.tier) for f in g4), default=(-1, -1))
    conflict = bool(g3) and bool(g4)
    if not facts:
        signal = SIGNAL_NEUTRAL
        surface = source_kind != "gdscript" or _engine_surface(chunk.code_mask or chunk.code_text, index.vocabulary, declared_names)
        confidence = NEUTRAL_WITH_ENGINE_SURFACE if surface else NEUTRAL_NO_ENGINE_SURFACE
        explanation = (
            "No Godot-3-only or Godot-4-only construct in the code; valid in both versions as far as the rules see."
            if surface
            else "Touches no engine API at all: valid in both versions."
        )
    elif conflict and r3 == r4:
        # Both versions' evidence of the same kind and tier in one chunk: one
        # side is misread (a project member, an unresolved receiver), and the
        # rules cannot tell which. No label beats the other; the chunk stays undecided.
        signal = SIGNAL_NEUTRAL
        confidence = CONFLICT_CONFIDENCE
        explanation = (
            "Conflicting evidence of the same kind, so neither version is claimed. Godot 3: "
            + "; ".join(_whats(g3))
            + ". Godot 4: "
            + "; ".join(_whats(g4))
        )
    else:
        signal = SIGNAL_GODOT3 if ((r3 > r4) if conflict else bool(g3)) else SIGNAL_GODOT4
        win, lose = (g3, g4) if signal == SIGNAL_GODOT3 else (g4, g3)
        s_win, s_lose = (s3, s4) if signal == SIGNAL_GODOT3 else (s4, s3)
        name, other = ("Godot 3", "Godot 4") if signal == SIGNAL_GODOT3 else ("Godot 4", "Godot 3")
        explanation = f"{name}: " + "; ".join(_whats(win))
        if not lose:
            confidence = round(s_win, 3)
        elif r3[0] != r4[0]:
            # A stronger kind (grammar, a type) against a weaker one (a name, the file format): the weaker costs a little.
            confidence = round(s_win * (1 - 0.25 * s_lose), 3)
        else:
            # The same kind, read with more certainty on one side (a resolved receiver against a bare member name).
            confidence = min(round(s_win * (1 - 0.5 * s_lose), 3), CONFLICT_WINNER_CONFIDENCE)
        if lose:
            explanation += f". Also {other} (weaker kind of evidence): " + "; ".join(_whats(lose))
        if all(f.kind == KIND_FILE_FORMAT for f in facts):
            explanation += (
                ". File format only: both versions read it"
                if signal == SIGNAL_GODOT3
                else ". File format only: Godot 3 cannot read it"
            )
    notes, elided = _notes_within_contract(g3)
    suffix = ""
    if elided:
        suffix += f". {elided} more changes in this chunk are not listed as migration notes (at most {MAX_MIGRATION_NOTES})."
    if set_aside:
        suffix += ("" if explanation.endswith(".") or suffix else ".") + " Not evidence: " + "; ".join(set_aside) + "."
    explanation = _fit(explanation, suffix, MAX_EXPLANATION)

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
    return Judgment(
        signal=signal,
        # Godot 3's file format needs no hand migration: Godot 4 reads it and rewrites it on save.
        needs_migration=signal != SIGNAL_NEUTRAL and any(f.kind != KIND_FILE_FORMAT for f in g3),
        confidence=confidence,
        evidence=tuple(evidence),
        migration_notes=notes,
        explanation=explanation,
        judge_kind="rules",
        model=RULES_JUDGE_VERSION,
        prompt_version="",
        evidence_kinds=tuple(sorted({f"{f.signal}:{f.kind}" for f in facts})),
    )


def _notes_within_contract(g3: list[Fact]) -> tuple[tuple[MigrationNote, ...], int]:
    """The migration notes of the Godot 3 facts, in line order, at most the contract's number, and how many were
    left out. A long function can hold more changes than that: every distinct change is kept first (at its first
    line), then further occurrences in line order."""
    notes: list[MigrationNote] = []
    seen: set[tuple[int, str]] = set()
    for f in g3:
        if f.old and (f.new or f.basis_record_id) and (f.line, f.old) not in seen:
            seen.add((f.line, f.old))
            notes.append(MigrationNote(f.line, f.old, f.new or REMOVED_IN_GODOT4, f.basis_record_id))
    notes.sort(key=lambda n: (n.line, n.old))
    if len(notes) <= MAX_MIGRATION_NOTES:
        return tuple(notes), 0
    firsts: dict[str, MigrationNote] = {}
    for n in notes:
        firsts.setdefault(n.old, n)
    kept = list(firsts.values())[:MAX_MIGRATION_NOTES]
    chosen = set(kept)
    kept += [n for n in notes if n not in chosen][: MAX_MIGRATION_NOTES - len(kept)]
    return tuple(sorted(kept, key=lambda n: (n.line, n.old))), len(notes) - len(kept)


def _fit(body: str, suffix: str, limit: int) -> str:
    """``body + suffix`` within ``limit`` characters: the body is cut first, so what follows it stays readable."""
    if len(body) + len(suffix) <= limit:
        return body + suffix
    room = max(limit // 2, limit - len(suffix))
    if len(body) > room:
        body = body[: room - 3] + "..."
    out = body + suffix
    return out if len(out) <= limit else out[: limit - 3] + "..."


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
