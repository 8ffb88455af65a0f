"""The comparison of two results of the same project: two analyses, or two judgment versions of one.

Pure: it takes each side's chunks as plain data (``DiffChunk``) and returns the
diff document (a JSON-ready dict) that the CLI prints, ``--json`` writes and
the web screen shows. Chunks are matched by chunk id (deterministic from path,
kind and name, so the same code in two analyses of a project has the same id).

The document::

    {"a": {...side...}, "b": {...side...},
     "verdict": {"a": label, "b": label, "changed": bool, "a_confidence", "b_confidence"},
     "summary": {"chunks_compared", "chunks_changed", "label_changes", "migration_changes",
                 "candidates_added", "candidates_removed", "candidates_moved",
                 "notes_added", "notes_removed", "only_in_a", "only_in_b",
                 "transitions": {"godot3->godot4": n, ...}},
     "chunks": [{"chunk_id", "source_file", "start_line", "end_line", "presence": "both"|"only_a"|"only_b",
                 "changed": bool, "label": {"a", "b"} | null, "needs_migration": {"a", "b"} | null,
                 "candidates": {"added": [...], "removed": [...], "moved": [{"table", "record_id", "a_rank", "b_rank",
                                "a_score", "b_score"}]},
                 "notes": {"added": [...], "removed": [...]}}]}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class DiffHit:
    table: str
    record_id: str
    score: float = 0.0
    title: str = ""


@dataclass(frozen=True)
class DiffNote:
    line: int
    old: str
    new: str
    basis_record_id: str = ""

    def as_dict(self) -> dict:
        return {"line": self.line, "old": self.old, "new": self.new, "basis_record_id": self.basis_record_id}


@dataclass(frozen=True)
class DiffChunk:
    chunk_id: str
    source_file: str
    start_line: int
    end_line: int
    signal: str  # "" when not judged or the judgment failed
    needs_migration: bool
    status: str = ""
    hits: Sequence[DiffHit] = ()  # in rank order
    notes: Sequence[DiffNote] = ()


@dataclass(frozen=True)
class DiffSide:
    ref: str  # analysis id or version id
    label: str  # the verdict's label ("" when none)
    confidence: float = 0.0
    analysis_id: str = ""
    version_id: str = ""
    chunks: Sequence[DiffChunk] = field(default_factory=tuple)

    def header(self) -> dict:
        return {
            "ref": self.ref,
            "analysis_id": self.analysis_id,
            "version_id": self.version_id,
            "label": self.label,
            "confidence": self.confidence,
        }


def _candidates(a: Sequence[DiffHit], b: Sequence[DiffHit]) -> dict:
    rank_a = {(h.table, h.record_id): (i + 1, h) for i, h in enumerate(a)}
    rank_b = {(h.table, h.record_id): (i + 1, h) for i, h in enumerate(b)}
    added = [
        {"table": h.table, "record_id": h.record_id, "title": h.title, "rank": r, "score": h.score}
        for k, (r, h) in rank_b.items()
        if k not in rank_a
    ]
    removed = [
        {"table": h.table, "record_id": h.record_id, "title": h.title, "rank": r, "score": h.score}
        for k, (r, h) in rank_a.items()
        if k not in rank_b
    ]
    moved = [
        {
            "table": k[0],
            "record_id": k[1],
            "a_rank": rank_a[k][0],
            "b_rank": rank_b[k][0],
            "a_score": rank_a[k][1].score,
            "b_score": rank_b[k][1].score,
        }
        for k in rank_a
        if k in rank_b and rank_a[k][0] != rank_b[k][0]
    ]
    return {"added": added, "removed": removed, "moved": moved}


def _notes(a: Iterable[DiffNote], b: Iterable[DiffNote]) -> dict:
    set_a, set_b = list(dict.fromkeys(a)), list(dict.fromkeys(b))
    return {"added": [n.as_dict() for n in set_b if n not in set_a], "removed": [n.as_dict() for n in set_a if n not in set_b]}


def _place(c: DiffChunk) -> dict:
    return {"chunk_id": c.chunk_id, "source_file": c.source_file, "start_line": c.start_line, "end_line": c.end_line}


def diff_chunk(a: DiffChunk | None, b: DiffChunk | None) -> dict:
    """One chunk's entry; ``changed`` is true when anything at all differs."""
    if a is None or b is None:
        present = b if a is None else a
        assert present is not None
        return {
            **_place(present),
            "presence": "only_b" if a is None else "only_a",
            "changed": True,
            "label": None,
            "needs_migration": None,
            "candidates": {"added": [], "removed": [], "moved": []},
            "notes": {"added": [], "removed": []},
        }
    candidates = _candidates(a.hits, b.hits)
    notes = _notes(a.notes, b.notes)
    label = {"a": a.signal, "b": b.signal} if a.signal != b.signal else None
    migration = {"a": a.needs_migration, "b": b.needs_migration} if a.needs_migration != b.needs_migration else None
    changed = bool(label or migration or any(candidates.values()) or any(notes.values()))
    return {
        **_place(b),
        "presence": "both",
        "changed": changed,
        "label": label,
        "needs_migration": migration,
        "candidates": candidates,
        "notes": notes,
    }


def diff_sides(a: DiffSide, b: DiffSide) -> dict:
    """The diff document of two sides (see the module docstring)."""
    by_a = {c.chunk_id: c for c in a.chunks}
    by_b = {c.chunk_id: c for c in b.chunks}
    order = [c.chunk_id for c in b.chunks] + [c.chunk_id for c in a.chunks if c.chunk_id not in by_b]
    entries = [diff_chunk(by_a.get(cid), by_b.get(cid)) for cid in order]
    transitions: dict[str, int] = {}
    for e in entries:
        if e["label"]:
            key = f"{e['label']['a'] or 'none'}->{e['label']['b'] or 'none'}"
            transitions[key] = transitions.get(key, 0) + 1
    summary = {
        "chunks_compared": sum(1 for e in entries if e["presence"] == "both"),
        "chunks_changed": sum(1 for e in entries if e["changed"]),
        "label_changes": sum(1 for e in entries if e["label"]),
        "migration_changes": sum(1 for e in entries if e["needs_migration"]),
        "candidates_added": sum(len(e["candidates"]["added"]) for e in entries),
        "candidates_removed": sum(len(e["candidates"]["removed"]) for e in entries),
        "candidates_moved": sum(len(e["candidates"]["moved"]) for e in entries),
        "notes_added": sum(len(e["notes"]["added"]) for e in entries),
        "notes_removed": sum(len(e["notes"]["removed"]) for e in entries),
        "only_in_a": sum(1 for e in entries if e["presence"] == "only_a"),
        "only_in_b": sum(1 for e in entries if e["presence"] == "only_b"),
        "transitions": dict(sorted(transitions.items())),
    }
    return {
        "a": a.header(),
        "b": b.header(),
        "verdict": {
            "a": a.label,
            "b": b.label,
            "changed": a.label != b.label,
            "a_confidence": a.confidence,
            "b_confidence": b.confidence,
        },
        "summary": summary,
        "chunks": entries,
    }


def chunk_from_row(
    chunk_id: str,
    source_file: str,
    start_line: int,
    end_line: int,
    judgment: dict | None,
    hits: Sequence[dict] | None,
    status: str = "",
) -> DiffChunk:
    """A DiffChunk from stored JSON (a judgment dict and hit dicts as the store keeps them)."""
    j = judgment or {}
    ok = (j.get("status") or "ok") == "ok"
    return DiffChunk(
        chunk_id=chunk_id,
        source_file=source_file,
        start_line=start_line,
        end_line=end_line,
        signal=(j.get("signal") or "") if ok else "",
        needs_migration=bool(j.get("needs_migration")),
        status=status,
        hits=tuple(
            DiffHit(h.get("table", ""), h.get("record_id", ""), float(h.get("score", 0.0)), h.get("title", "")) for h in hits or ()
        ),
        notes=tuple(
            DiffNote(int(n.get("line", 0)), n.get("old", ""), n.get("new", ""), n.get("basis_record_id", ""))
            for n in j.get("migration_notes") or ()
        ),
    )
