"""What a patch is made of: edits on byte ranges, each with its basis, and TODOs.

An ``Edit`` replaces ``source[start:end]`` (byte offsets into the file's UTF-8
bytes) with ``replacement``.  Its ``basis`` says why: the rule, the knowledge
record it rests on (an id of the shipped knowledge base: ``rename:<table>:<old>``
for the converter's rename pairs, ``change:<id>`` for the migration-guide
changes), a confidence, and the receiver resolution the change depends on
(``self (extends KinematicBody2D)``, ``OS (engine singleton)``, ...).  An edit
that absorbed smaller edits inside its range (a ``connect`` rewrite whose signal
name is also renamed) carries the basis of each.

A ``Todo`` is a change the patch does not make because it cannot be made
mechanically (a removed member, a behaviour change, an ambiguous receiver):
it is listed with its note, never guessed.

A ``Kept`` entry records a place where a rename *could* have applied by name and
was deliberately left alone (a user-defined member that shares an engine name,
a name in a comment or string): the evidence that the traps were seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Basis:
    rule: str  # e.g. rename-method, export-annotation, yield-await
    record_id: str  # knowledge record id ("" only for rules with no record, documented per rule)
    confidence: float  # 0..1
    receiver: str = ""  # how the receiver was resolved; "" when the rule needs none
    note: str = ""  # old -> new, or what the rule did

    def as_dict(self) -> dict:
        return {
            "rule": self.rule,
            "record_id": self.record_id,
            "confidence": round(self.confidence, 3),
            "receiver": self.receiver,
            "note": self.note,
        }


@dataclass(frozen=True)
class Edit:
    start: int  # byte offset, inclusive
    end: int  # byte offset, exclusive
    replacement: str
    basis: tuple[Basis, ...]

    @property
    def confidence(self) -> float:
        return min(b.confidence for b in self.basis)


@dataclass(frozen=True)
class Todo:
    path: str
    line: int  # 1-based, in the original file
    rule: str
    symbol: str
    note: str
    record_id: str = ""

    def as_dict(self) -> dict:
        return {
            "file": self.path,
            "line": self.line,
            "rule": self.rule,
            "symbol": self.symbol,
            "note": self.note,
            "record_id": self.record_id,
        }


@dataclass(frozen=True)
class Kept:
    path: str
    line: int
    symbol: str
    reason: str


@dataclass
class FilePatch:
    path: str
    original: str
    patched: str
    edits: list[Edit] = field(default_factory=list)
    todos: list[Todo] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.original != self.patched


@dataclass(frozen=True)
class Hunk:
    path: str
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    text: str  # the hunk as it appears in the diff, header included
    basis: tuple[Basis, ...]
    basis_lines: tuple[int, ...] = ()  # per basis entry: the line of the original file its edit starts on


@dataclass
class PatchResult:
    files: list[FilePatch]
    hunks: list[Hunk]
    diff: str

    @property
    def todos(self) -> list[Todo]:
        return [t for f in self.files for t in f.todos]

    @property
    def kept(self) -> list[Kept]:
        return [k for f in self.files for k in f.kept]

    def summary(self) -> dict:
        changed = [f for f in self.files if f.changed]
        return {
            "files": len(self.files),
            "files_changed": len(changed),
            "hunks": len(self.hunks),
            "edits": sum(len(f.edits) for f in self.files),
            "todos": len(self.todos),
            "kept": len(self.kept),
        }


class EditConflict(ValueError):
    """Two edits overlap: a rule bug, never bad input."""


def apply_edits(source: bytes, edits: list[Edit]) -> bytes:
    """Apply non-overlapping edits; raises EditConflict on an overlap."""
    out: list[bytes] = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            raise EditConflict(f"edits overlap at byte {e.start}")
        out.append(source[pos : e.start])
        out.append(e.replacement.encode("utf-8"))
        pos = e.end
    out.append(source[pos:])
    return b"".join(out)
