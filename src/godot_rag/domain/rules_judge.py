"""The offline rules judge: deterministic judgments from code facts and evidence.

Every fact is matched against the chunk's code mask (comments and strings
blanked), so text inside comments or strings -- including instructions aimed
at a model -- never changes a rules judgment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

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

RULES_JUDGE_VERSION = "rules/1"


@dataclass(frozen=True)
class Fact:
    signal: str  # godot3 | godot4
    strength: float  # 0..1: how sure this fact alone is
    what: str
    line: int  # 1-based file line
    old: str = ""
    new: str = ""
    basis_record_id: str = ""


@dataclass(frozen=True)
class RenameEntry:
    record_id: str
    old: str
    new: str
    change_type: str
    enabled: bool
    old_in_godot4: bool
    new_in_godot3: bool


@dataclass
class RenameIndex:
    """Enabled GDScript-side rename pairs by old and by new name."""

    by_old: dict[str, list[RenameEntry]] = field(default_factory=dict)
    by_new: dict[str, list[RenameEntry]] = field(default_factory=dict)

    @classmethod
    def from_payloads(cls, rows: Iterable[tuple[str, dict]]) -> "RenameIndex":
        index = cls()
        for record_id, p in rows:
            if p.get("language") == "csharp" or "old_symbol" not in p:
                continue
            entry = RenameEntry(
                record_id, p["old_symbol"], p["new_symbol"], p.get("change_type", ""), bool(p.get("enabled", True)),
                bool(p.get("old_in_godot4", False)), bool(p.get("new_in_godot3", False)),
            )
            index.by_old.setdefault(entry.old, []).append(entry)
            index.by_new.setdefault(entry.new, []).append(entry)
        return index


# ---------------------------------------------------------------- GDScript facts

_G3_SYNTAX: list[tuple[re.Pattern[str], str, float, str, str]] = [
    (re.compile(r"^[ \t]*tool[ \t]*$", re.M), "bare `tool` keyword (Godot 4 writes @tool)", 0.95, "tool", "@tool"),
    (re.compile(r"^[ \t]*export\b[ \t]*(\(|var\b)", re.M), "`export` keyword (Godot 4 uses @export annotations)", 0.95, "export", "@export"),
    (re.compile(r"^[ \t]*onready[ \t]+var\b", re.M), "`onready` keyword (Godot 4 uses @onready)", 0.95, "onready", "@onready"),
    (re.compile(r"\bsetget\b"), "`setget` (Godot 4 uses set/get property syntax)", 0.95, "setget", "set/get"),
    (re.compile(r"\byield[ \t]*\("), "`yield()` (Godot 4 uses await)", 0.95, "yield(", "await"),
    (re.compile(r"\.instance[ \t]*\([ \t]*\)"), "`PackedScene.instance()` (instantiate() in Godot 4)", 0.85, "instance()", "instantiate()"),
    (re.compile(r"^[ \t]*(remote|master|puppet|remotesync|mastersync|puppetsync)[ \t]+func\b", re.M),
     "RPC keyword on a function (Godot 4 uses @rpc)", 0.95, "remote func", "@rpc func"),
    (re.compile(r"^[ \t]*func[ \t]+_init\([^)]*\)[ \t]*\.[ \t]*\(", re.M), "`_init().(...)` parent constructor call", 0.95, "_init().()", "super()"),
    (re.compile(r"(?<![\w.])move_and_slide[ \t]*\([ \t]*[^)\s]"), "`move_and_slide(velocity, ...)` with arguments (Godot 4 takes none: velocity is a property)",
     0.9, "move_and_slide(velocity)", "move_and_slide()"),
    (re.compile(r"\b(PoolStringArray|PoolIntArray|PoolRealArray|PoolByteArray|PoolVector2Array|PoolVector3Array|PoolColorArray)\b"),
     "Pool*Array type (Packed*Array in Godot 4)", 0.9, "", ""),
]

_G4_SYNTAX: list[tuple[re.Pattern[str], str, float]] = [
    (re.compile(r"^[ \t]*@(export\w*|onready|tool|icon|rpc|warning_ignore\w*|static_unload|abstract)\b", re.M),
     "annotation (Godot 4 only)", 0.95),
    (re.compile(r"\bawait\b"), "`await` (Godot 4 only)", 0.95),
    (re.compile(r"\bsuper[ \t]*[.(]"), "`super` call (Godot 4 only)", 0.9),
    (re.compile(r"(?:[=(,:\[]|return)[ \t]*func\b[^\n]*\)[ \t]*(->[ \t]*\w+[ \t]*)?:"), "lambda (Godot 4 only)", 0.9),
    (re.compile(r"\bArray\[[A-Z]\w*\]"), "typed array (Godot 4 only)", 0.9),
    (re.compile(r"\.emit[ \t]*\("), "`signal.emit()` (Godot 4 only)", 0.85),
    (re.compile(r"\.connect[ \t]*\([ \t]*[A-Za-z_][\w.]*[ \t]*[,)]"), "Callable signal connect (Godot 4 only)", 0.8),
    (re.compile(r"^[ \t]+set[ \t]*\([ \t]*\w+[ \t]*\)[ \t]*:|^[ \t]+get[ \t]*:", re.M), "set/get property syntax (Godot 4 only)", 0.9),
    (re.compile(r"\.instantiate[ \t]*\("), "`instantiate()` (Godot 4 name)", 0.85),
]

# Literal prefixes live in code, the string after them is masked: check code_text
# at positions where the mask shows code.
_G4_LITERALS = re.compile(r"(?<![\w\"'])([&^])[\"']")


def _line_of(chunk: Chunk, offset: int) -> int:
    return chunk.span.start_line + chunk.code_text.count("\n", 0, offset)


def _in_code(chunk: Chunk, offset: int) -> bool:
    mask = chunk.code_mask or chunk.code_text
    return offset < len(mask) and mask[offset] == chunk.code_text[offset] and not mask[offset].isspace()


def gdscript_facts(chunk: Chunk, index: RenameIndex, declared_names: frozenset[str]) -> list[Fact]:
    mask = chunk.code_mask or chunk.code_text
    facts: list[Fact] = []
    for pattern, what, strength, old, new in _G3_SYNTAX:
        for m in pattern.finditer(mask):
            facts.append(Fact(SIGNAL_GODOT3, strength, what, _line_of(chunk, m.start()), old, new))
    # Three-argument connect: the signal name and method are strings, so the
    # match runs on the text and is kept only where it starts in code.
    for m in re.finditer(r"\bconnect[ \t]*\([ \t]*[\"'][^\"']*[\"'][ \t]*,[^,()]+,[ \t]*[\"']", chunk.code_text):
        if _in_code(chunk, m.start()):
            facts.append(Fact(SIGNAL_GODOT3, 0.9, "connect(signal, target, \"method\") (Godot 4 connects a Callable)",
                              _line_of(chunk, m.start()), "connect(\"signal\", obj, \"method\")", "signal.connect(callable)"))
    for pattern, what, strength in _G4_SYNTAX:
        for m in pattern.finditer(mask):
            facts.append(Fact(SIGNAL_GODOT4, strength, what, _line_of(chunk, m.start())))
    for m in _G4_LITERALS.finditer(chunk.code_text):
        if _in_code(chunk, m.start()):
            kind = "StringName" if m.group(1) == "&" else "NodePath"
            facts.append(Fact(SIGNAL_GODOT4, 0.9, f"{kind} literal {m.group(1)}\"...\" (Godot 4 only)", _line_of(chunk, m.start())))
    facts.extend(_rename_facts(chunk, mask, index, declared_names))
    return facts


_WORD_RE = re.compile(r"(?<![\w@])([A-Za-z_][A-Za-z0-9_]*)")


def _rename_facts(chunk: Chunk, mask: str, index: RenameIndex, declared_names: frozenset[str]) -> list[Fact]:
    facts: list[Fact] = []
    seen: set[tuple[str, int]] = set()
    for m in _WORD_RE.finditer(mask):
        word = m.group(1)
        start, end = m.start(1), m.end(1)
        before = mask[:start].rstrip(" \t")
        prev_char = before[-1:] if before else ""
        after = mask[end:].lstrip(" \t")
        next_char = after[:1]
        prev_word = before.split()[-1] if before.split() else ""
        if prev_word in ("func", "var", "const", "signal", "class", "enum", "class_name"):
            continue  # a declaration of the project's own name
        for entry in index.by_old.get(word, ()):
            if not entry.enabled:
                continue  # disabled pairs are known false-rename traps: never evidence alone
            if _rename_applies(entry, prev_char, next_char, word, declared_names):
                key = (entry.record_id, _line_of(chunk, start))
                if key in seen:
                    continue
                seen.add(key)
                strength = 0.6 if entry.old_in_godot4 else 0.9
                facts.append(Fact(SIGNAL_GODOT3, strength, f"Godot 3 {entry.change_type} `{entry.old}` (renamed `{entry.new}` in Godot 4)",
                                  key[1], entry.old, entry.new, entry.record_id))
        for entry in index.by_new.get(word, ()):
            if not entry.enabled or entry.new_in_godot3 or entry.new == entry.old:
                continue
            if entry.change_type in ("class", "builtin_type") and prev_char != ".":
                facts.append(Fact(SIGNAL_GODOT4, 0.85, f"Godot 4 {entry.change_type} `{entry.new}` (was `{entry.old}` in Godot 3)",
                                  _line_of(chunk, start), basis_record_id=entry.record_id))
                break
            if entry.change_type == "method" and prev_char == "." and next_char == "(" and word not in declared_names:
                facts.append(Fact(SIGNAL_GODOT4, 0.7, f"Godot 4 method `{entry.new}` (was `{entry.old}` in Godot 3)",
                                  _line_of(chunk, start), basis_record_id=entry.record_id))
                break
    return facts


def _rename_applies(entry: RenameEntry, prev_char: str, next_char: str, word: str, declared: frozenset[str]) -> bool:
    ct = entry.change_type
    if ct in ("class", "builtin_type"):
        return prev_char != "." and word not in declared
    if ct == "method":
        # A bare call of a method the file itself declares is the user's own method.
        if next_char != "(":
            return False
        return prev_char == "." or word not in declared
    if ct == "property":
        return prev_char == "." and next_char != "(" and word not in declared
    if ct == "enum":
        return word not in declared
    if ct == "constant":
        return prev_char == "."
    return False


# ---------------------------------------------------------------- direct-chunk facts

def direct_facts(chunk: Chunk, source_kind: str, index: RenameIndex) -> list[Fact]:
    text = chunk.code_mask or chunk.code_text
    facts: list[Fact] = []

    def add(pattern: str, signal: str, strength: float, what: str, flags: int = re.M) -> None:
        for m in re.finditer(pattern, text, flags):
            facts.append(Fact(signal, strength, what, _line_of(chunk, m.start())))

    if source_kind == "project_config":
        add(r"^config_version[ \t]*=[ \t]*[34]\b", SIGNAL_GODOT3, 0.99, "config_version 3/4 (Godot 3 project file)")
        add(r"^config_version[ \t]*=[ \t]*5\b", SIGNAL_GODOT4, 0.99, "config_version=5 (Godot 4 project file)")
        add(r"^config/features[ \t]*=[ \t]*PackedStringArray\([^)]*\"4\.\d", SIGNAL_GODOT4, 0.99, "config/features names Godot 4.x")
        add(r"PoolStringArray\(", SIGNAL_GODOT3, 0.9, "PoolStringArray value (Godot 3)")
        add(r"\"scancode\"|\"physical_scancode\"", SIGNAL_GODOT3, 0.85, "input event scancode (keycode in Godot 4)")
        add(r"\"physical_keycode\"|\"keycode\"", SIGNAL_GODOT4, 0.85, "input event keycode (Godot 4)")
        add(r"^[^\n=]*=[ \t]*\"\*res://", SIGNAL_NEUTRAL, 0.0, "autoload entry")
    elif source_kind in ("scene", "resource"):
        add(r"^\[gd_(scene|resource)[^\]]*\bformat=2\b", SIGNAL_GODOT3, 0.6, "scene/resource format=2 (written by Godot 3; Godot 4 still loads it)")
        add(r"^\[gd_(scene|resource)[^\]]*\bformat=[34]\b", SIGNAL_GODOT4, 0.95, "scene/resource format=3/4 (written by Godot 4)")
        add(r"\buid=\"uid://", SIGNAL_GODOT4, 0.8, "uid:// resource id (Godot 4)")
        add(r"^\[ext_resource[^\]]*\bid=\d+\b", SIGNAL_GODOT3, 0.7, "numeric ext_resource id (Godot 3 format)")
        add(r"(Ext|Sub)Resource\([ \t]+\d+[ \t]+\)", SIGNAL_GODOT3, 0.7, "ExtResource( 1 ) reference (Godot 3 format)")
        add(r"(Ext|Sub)Resource\(\"[^\"]+\"\)", SIGNAL_GODOT4, 0.8, "ExtResource(\"id\") reference (Godot 4 format)")
        for m in re.finditer(r"\btype=\"([A-Za-z0-9_]+)\"", text):
            facts.extend(_type_facts(chunk, m.group(1), m.start(1), index))
        for m in re.finditer(r"^([a-z_][a-z0-9_/]*)[ \t]*=", text, re.M):
            prop = m.group(1).split("/")[0]
            for entry in index.by_old.get(prop, ()):
                if entry.enabled and entry.change_type == "property" and not entry.old_in_godot4:
                    facts.append(Fact(SIGNAL_GODOT3, 0.8, f"Godot 3 property `{prop}` (renamed `{entry.new}`)",
                                      _line_of(chunk, m.start()), prop, entry.new, entry.record_id))
                    break
    elif source_kind == "import_meta":
        add(r"res://\.import/", SIGNAL_GODOT3, 0.85, "import cache under res://.import (Godot 3)")
        add(r"res://\.godot/imported/", SIGNAL_GODOT4, 0.85, "import cache under res://.godot/imported (Godot 4)")
        for m in re.finditer(r"\btype=\"([A-Za-z0-9_]+)\"", text):
            facts.extend(_type_facts(chunk, m.group(1), m.start(1), index))
    elif source_kind == "uid":
        add(r"^uid://", SIGNAL_GODOT4, 0.9, ".uid sidecar file (Godot 4.4+)")
    return facts


def _type_facts(chunk: Chunk, type_name: str, offset: int, index: RenameIndex) -> list[Fact]:
    for entry in index.by_old.get(type_name, ()):
        if entry.enabled and entry.change_type in ("class", "builtin_type"):
            return [Fact(SIGNAL_GODOT3, 0.85 if not entry.old_in_godot4 else 0.5,
                         f"Godot 3 type `{type_name}` (renamed `{entry.new}` in Godot 4)",
                         _line_of(chunk, offset), type_name, entry.new, entry.record_id)]
    for entry in index.by_new.get(type_name, ()):
        if entry.enabled and entry.change_type in ("class", "builtin_type") and not entry.new_in_godot3:
            return [Fact(SIGNAL_GODOT4, 0.85, f"Godot 4 type `{type_name}` (was `{entry.old}`)", _line_of(chunk, offset),
                         basis_record_id=entry.record_id)]
    return []


# ---------------------------------------------------------------- judgment

def judge_chunk(
    chunk: Chunk,
    source_kind: str,
    hits: list[RetrievalHit],
    index: RenameIndex,
    declared_names: frozenset[str] = frozenset(),
) -> Judgment:
    if source_kind == "gdscript":
        facts = gdscript_facts(chunk, index, declared_names)
    else:
        facts = direct_facts(chunk, source_kind, index)
    facts = [f for f in facts if f.signal != SIGNAL_NEUTRAL]
    g3 = [f for f in facts if f.signal == SIGNAL_GODOT3]
    g4 = [f for f in facts if f.signal == SIGNAL_GODOT4]
    s3 = _combine(f.strength for f in g3)
    s4 = _combine(f.strength for f in g4)
    if not facts:
        signal, confidence = SIGNAL_NEUTRAL, 0.6
        explanation = "No Godot-3-only or Godot-4-only construct in the code; valid in both versions as far as the rules see."
    elif s3 >= s4:
        signal = SIGNAL_GODOT3
        confidence = round(s3 * (1 - 0.5 * s4), 3)
        explanation = "Godot 3: " + "; ".join(sorted({f.what for f in g3}))
        if g4:
            explanation += ". Also Godot 4: " + "; ".join(sorted({f.what for f in g4}))
    else:
        signal = SIGNAL_GODOT4
        confidence = round(s4 * (1 - 0.5 * s3), 3)
        explanation = "Godot 4: " + "; ".join(sorted({f.what for f in g4}))
        if g3:
            explanation += ". Also Godot 3: " + "; ".join(sorted({f.what for f in g3}))

    fact_records = {f.basis_record_id for f in facts if f.basis_record_id}
    evidence: list[EvidenceUse] = []
    for hit in hits:
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
        if f.old and (f.line, f.old) not in seen_notes:
            seen_notes.add((f.line, f.old))
            notes.append(MigrationNote(f.line, f.old, f.new, f.basis_record_id))
    return Judgment(
        signal=signal,
        needs_migration=bool(g3),
        confidence=confidence,
        evidence=tuple(evidence),
        migration_notes=tuple(sorted(notes, key=lambda n: (n.line, n.old))),
        explanation=explanation,
        judge_kind="rules",
        model=RULES_JUDGE_VERSION,
        prompt_version="",
    )


def _combine(strengths: Iterable[float]) -> float:
    """Independent facts reinforce each other: 1 - prod(1 - s)."""
    remaining = 1.0
    for s in strengths:
        remaining *= 1.0 - s
    return 1.0 - remaining
