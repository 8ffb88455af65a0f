"""What the web screen shows, computed from store rows: no I/O here.

The gateway's web module reads rows from the store, passes them through these
functions and renders the result with autoescaping templates; the same view
dicts feed the HTML pages, the live updates and the JSON/CSV exports.
"""

from __future__ import annotations

import csv
import io
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

import jinja2

from godot_rag.domain.aggregation.verdict import ChunkOutcome, file_signal_weights
from godot_rag.infra.kb_store import DEFAULT_CONFIG
from godot_rag.infra.rows import FileRow, FileVersionRow, VerdictRow, WebChunkRow, WebFileChunkRow, WebTiming
from godot_rag.pipeline.results import chunk_status

# The chunk states in the design's words ("L16-L18 in progress, interrupted").
STATUS_WORDS = {
    "done": "done",
    "in_progress": "in progress",
    "interrupted": "in progress, interrupted",
    "waiting": "waiting",
    "failed": "failed",
}
STATUSES = tuple(STATUS_WORDS)
SIGNALS = ("godot3", "godot4", "neutral")
SIGNAL_WORDS = {"godot3": "Godot 3", "godot4": "Godot 4", "neutral": "neutral"}

VERDICT_WORDS = {
    "godot3": "a Godot 3 project",
    "godot4": "a Godot 4 project",
    "mixed": "mixed: written partly for Godot 3 and partly for Godot 4",
    "undetermined": "undetermined: no chunk carries a Godot-3-only or Godot-4-only signal",
}

# The candidate table's score columns: what each measures, which way is better, its range.
_WV, _WK, _WT, _WG = DEFAULT_CONFIG.weights_hybrid
SCORE_LEGEND = (
    {
        "key": "vector",
        "label": "vector",
        "metric": "cosine similarity of the chunk's embedding text to the record's vector",
        "direction": "higher is closer",
        "range": "0 to 1; empty when the record has no vector (lexical only)",
    },
    {
        "key": "keys",
        "label": "keys",
        "metric": "idf-weighted match of the chunk's identifiers with the record's exact keys, "
        "divided by the best candidate of its table",
        "direction": "higher is better",
        "range": "0 to 1 (1 = best of the table)",
    },
    {
        "key": "text",
        "label": "full text",
        "metric": "PostgreSQL ts_rank of the record's text for the query keys, divided by the best candidate of its table",
        "direction": "higher is better",
        "range": "0 to 1 (1 = best of the table)",
    },
    {
        "key": "trigram",
        "label": "trigram",
        "metric": "pg_trgm similarity of the closest query term to the record's title",
        "direction": "higher is closer",
        "range": "0 to 1",
    },
    {
        "key": "fused",
        "label": "fused",
        "metric": f"{_WV:g} vector + {_WK:g} keys + {_WT:g} text + {_WG:g} trigram "
        "(a record without a vector: the lexical part rescaled); the search keeps the best of each table by it",
        "direction": "higher is better",
        "range": "0 to 1",
    },
)
SCORE_KEYS = ("vector", "keys", "text", "trigram")

_RANGE = re.compile(r"^#?L(\d+)(?:-L?(\d+))?$")


def line_range(start: int, end: int) -> str:
    return f"L{start}-L{end}"


def parse_range(fragment: str) -> tuple[int, int] | None:
    """'#L12-L26', 'L12-26' or 'L12' -> (12, 26); anything else -> None."""
    m = _RANGE.match(fragment.strip())
    if not m:
        return None
    start = int(m.group(1))
    end = int(m.group(2) or start)
    return (start, end) if end >= start else None


def file_href(analysis_id: str, source_file: str, start: int | None = None, end: int | None = None) -> str:
    href = f"/a/{quote(analysis_id, safe='')}/f/{quote(source_file, safe='/')}"
    return href + (f"#{line_range(start, end)}" if start is not None and end is not None else "")


# ---------------------------------------------------------------- chunk list


def chunk_view(row: WebChunkRow, running: bool) -> dict:
    """One chunk of the live list, from a ``Store.web_chunk_rows`` row."""
    status, stage, last_error = chunk_status(row.stages, running)
    start, end = int(row.start_line), int(row.end_line)
    notes = [{"line": n.get("line", 0), "old": n.get("old", ""), "new": n.get("new", "")} for n in row.migration_notes or []]
    signal = row.signal or ""
    if row.judgment_status == "failed":
        signal = ""
    return {
        "chunk_id": row.chunk_id,
        "source_file": row.source_file,
        "file_order": int(row.file_order or 0),
        "chunk_order": int(row.chunk_order),
        "chunk_kind": row.chunk_kind,
        "name": row.name,
        "start_line": start,
        "end_line": end,
        "range": line_range(start, end),
        "status": status,
        "status_words": STATUS_WORDS[status],
        "stage": stage,
        "last_error": last_error,
        "signal": signal,
        "needs_migration": bool(row.needs_migration) and bool(signal),
        "confidence": None if row.confidence is None else round(float(row.confidence), 3),
        "migration_notes": notes,
        "line": f"{row.source_file} {line_range(start, end)} {STATUS_WORDS[status]}",
        "order_key": f"{int(row.file_order or 0):08d}:{int(row.chunk_order):08d}",
        "signature": (status, stage, signal, bool(row.needs_migration), len(notes), last_error),
    }


@dataclass(frozen=True)
class ChunkFilter:
    status: str = ""
    signal: str = ""
    file: str = ""
    migration: str = ""  # "" | "yes" | "no"

    @classmethod
    def from_query(cls, q: Mapping[str, str]) -> ChunkFilter:
        status = q.get("status", "")
        signal = q.get("signal", "")
        migration = q.get("migration", "")
        return cls(
            status if status in STATUSES else "",
            signal if signal in SIGNALS or signal == "none" else "",
            q.get("file", "")[:1000],
            migration if migration in ("yes", "no") else "",
        )

    def query_string(self) -> str:
        """The filter as a page's query string ('' for no filter), for links that keep it."""
        kept = [
            (k, v)
            for k, v in (("status", self.status), ("signal", self.signal), ("file", self.file), ("migration", self.migration))
            if v
        ]
        return ("?" + urlencode(kept)) if kept else ""

    def keeps(self, v: dict) -> bool:
        if self.status and v["status"] != self.status:
            return False
        if self.signal and (v["signal"] or "none") != self.signal:
            return False
        if self.file and v["source_file"] != self.file:
            return False
        if self.migration == "yes" and not v["needs_migration"]:
            return False
        return not (self.migration == "no" and v["needs_migration"])


def filter_chunks(views: Iterable[dict], f: ChunkFilter) -> list[dict]:
    return [v for v in views if f.keeps(v)]


def status_counts(views: Iterable[dict]) -> dict[str, int]:
    counts = {s: 0 for s in STATUSES}
    signals = {s: 0 for s in SIGNALS}
    total = migration = 0
    for v in views:
        total += 1
        counts[v["status"]] += 1
        if v["signal"] in signals:
            signals[v["signal"]] += 1
        migration += 1 if v["needs_migration"] else 0
    return {"total": total, **counts, **signals, "needs_migration": migration}


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def progress_view(counts: dict[str, int], timing: WebTiming, *, running: bool, window_s: float = 30.0) -> dict:
    """Throughput (chunks finished per second) and the time left at that pace.

    The pace is that of the last ``window_s`` while chunks finish in it, else
    the whole run's; the estimate is empty when nothing finished yet.
    """
    total = counts.get("total", 0)
    settled = counts.get("done", 0) + counts.get("failed", 0)
    remaining = max(0, total - settled)
    rate = 0.0
    recent = int(timing.recent or 0)
    last, created = timing.last_done, timing.created_at
    if running and recent > 0:
        rate = recent / window_s
    elif timing.done and isinstance(last, datetime) and isinstance(created, datetime):
        elapsed = (last - created).total_seconds()
        rate = int(timing.done) / elapsed if elapsed > 0 else 0.0
    elapsed_s = None
    if isinstance(created, datetime):
        end = last if not running and isinstance(last, datetime) else timing.now
        if isinstance(end, datetime):
            elapsed_s = (end - created).total_seconds()
    if not running:
        eta = "finished"
    elif rate > 0:
        eta = _duration(remaining / rate)
    else:
        eta = "not known yet" if remaining else "settling"
    return {
        "settled": settled,
        "remaining": remaining,
        "throughput": f"{rate:.1f} chunks/s" if rate else "-",
        "eta": eta,
        "elapsed": "-" if elapsed_s is None else _duration(elapsed_s),
        "percent": int(100 * settled / total) if total else (0 if running else 100),
    }


# ---------------------------------------------------------------- files


def file_tree(files: Sequence[FileRow], views: Sequence[dict]) -> dict:
    """Included files as a folder tree (with per-file chunk counts) and the
    excluded ones apart, each with its reason."""
    per_file: dict[str, dict] = {}
    for v in views:
        c = per_file.setdefault(
            v["source_file"], {"total": 0, "done": 0, "failed": 0, "godot3": 0, "godot4": 0, "neutral": 0, "needs_migration": 0}
        )
        c["total"] += 1
        c["done"] += v["status"] == "done"
        c["failed"] += v["status"] == "failed"
        if v["signal"] in SIGNALS:
            c[v["signal"]] += 1
        c["needs_migration"] += v["needs_migration"]
    root: dict = {"name": "", "path": "", "folders": {}, "files": []}
    excluded: list[dict] = []
    for f in files:
        entry = {
            "source_file": f.source_file,
            "name": posixpath.basename(f.source_file.rstrip("/")) or f.source_file,
            "source_kind": f.source_kind,
            "status": f.status,
            "excluded_reason": f.excluded_reason,
            "error": f.error,
            "chunk_count": int(f.chunk_count or 0),
            "reused": bool(f.chunks_reused),
            "counts": per_file.get(
                f.source_file, {"total": 0, "done": 0, "failed": 0, "godot3": 0, "godot4": 0, "neutral": 0, "needs_migration": 0}
            ),
        }
        if not f.included:
            excluded.append(entry)
            continue
        node = root
        parts = f.source_file.split("/")
        for i, part in enumerate(parts[:-1]):
            node = node["folders"].setdefault(part, {"name": part, "path": "/".join(parts[: i + 1]), "folders": {}, "files": []})
        node["files"].append(entry)

    def finish(node: dict) -> dict:
        folders = [finish(n) for _, n in sorted(node["folders"].items())]
        total = sum(x["chunk_total"] for x in folders) + sum(x["counts"]["total"] for x in node["files"])
        done = sum(x["chunk_done"] for x in folders) + sum(x["counts"]["done"] for x in node["files"])
        nfiles = sum(x["file_total"] for x in folders) + len(node["files"])
        return {
            "name": node["name"],
            "path": node["path"],
            "folders": folders,
            "files": node["files"],
            "chunk_total": total,
            "chunk_done": done,
            "file_total": nfiles,
        }

    return {"root": finish(root), "excluded": excluded}


def file_meta(entry: dict) -> str:
    """The counts beside a file in the tree, as one line of text."""
    c = entry["counts"]
    if entry["status"] == "excluded":
        return entry["excluded_reason"]
    parts = [f"{c['done']}/{c['total'] or entry['chunk_count']} chunks done"]
    if c["failed"]:
        parts.append(f"{c['failed']} failed")
    for s in ("godot3", "godot4"):
        if c[s]:
            parts.append(f"{c[s]} {SIGNAL_WORDS[s]}")
    if c["needs_migration"]:
        parts.append(f"{c['needs_migration']} to migrate")
    return ", ".join(parts)


# ---------------------------------------------------------------- verdict


def verdict_view(verdict: VerdictRow | None, running: bool, counts: dict[str, int]) -> dict:
    if verdict is None:
        settled = counts.get("done", 0) + counts.get("failed", 0)
        words = f"not decided yet: {settled} of {counts.get('total', 0)} chunks settled" if running else "no verdict recorded"
        return {"label": "", "words": words, "confidence": None, "counts": {}, "basis": []}
    c = verdict.counts or {}
    counts_words = (
        f"{c.get('godot3', 0)} chunks read as Godot 3, {c.get('godot4', 0)} as Godot 4, "
        f"{c.get('neutral', 0)} neutral, {c.get('failed', 0)} failed, of {c.get('total', 0)}"
    )
    return {
        "label": verdict.label,
        "words": VERDICT_WORDS.get(verdict.label, verdict.label),
        "confidence": round(float(verdict.confidence or 0), 3),
        "confidence_pct": int(round(100 * float(verdict.confidence or 0))),
        "counts": c,
        "counts_words": counts_words,
        "basis": list(verdict.basis or []),
    }


def signal_chart(
    views: Sequence[dict],
    source_kinds: dict[str, str],
    *,
    top: int = 12,
    deciding: int = 5,
    width: int = 640,
    label_w: int = 220,
    row_h: int = 20,
) -> dict:
    """A diverging bar chart: per file, its Godot 3 weight to the left of the
    axis and its Godot 4 weight to the right (the sums the verdict weighs).
    The files the verdict names as strongest (its top ``deciding`` per side)
    are marked as deciding."""
    outcomes = [
        ChunkOutcome(
            v["source_file"],
            source_kinds.get(v["source_file"], ""),
            v["chunk_kind"],
            "done" if v["status"] == "done" and v["signal"] else "failed",
            v["signal"],
            v["confidence"] or 0.0,
        )
        for v in views
    ]
    weights = file_signal_weights(outcomes)
    dec: set[str] = set()
    for side in (0, 1):
        ranked = sorted(((w[side], f) for f, w in weights.items() if w[side] > 0), key=lambda x: (-x[0], x[1]))
        dec.update(f for _, f in ranked[:deciding])
    rows = sorted(weights.items(), key=lambda kv: (-(kv[1][0] + kv[1][1]), kv[0]))[:top]
    biggest = max((max(w) for _, w in rows), default=0.0) or 1.0
    half = (width - label_w) / 2
    axis = label_w + half
    bars = []
    for i, (f, (w3, w4)) in enumerate(rows):
        y = 24 + i * row_h
        l3 = half * w3 / biggest
        l4 = half * w4 / biggest
        bars.append(
            {
                "file": f,
                "w3": round(w3, 2),
                "w4": round(w4, 2),
                "deciding": f in dec,
                "y": y,
                "text_y": y + row_h * 0.7,
                "x3": round(axis - l3, 1),
                "len3": round(l3, 1),
                "len4": round(l4, 1),
                "label": f if len(f) <= 30 else "…" + f[-29:],
            }
        )
    height = 24 + len(rows) * row_h + 8
    return {
        "bars": bars,
        "width": width,
        "height": height,
        "axis": axis,
        "label_w": label_w,
        "row_h": row_h - 4,
        "files_total": len(weights),
        "shown": len(rows),
    }


# ---------------------------------------------------------------- one file, its chunks


def source_segments(text: str, chunks: Sequence[dict]) -> list[dict]:
    """The file's lines grouped by the chunk that covers them (blank lines between chunks stand alone)."""
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()
    spans = sorted((int(c["start_line"]), int(c["end_line"]), c) for c in chunks)
    segments: list[dict] = []
    n = 1
    for start, end, c in spans:
        start = max(start, n)  # overlapping spans never happen for a valid file; show the text once
        if start > n:
            segments.append({"chunk": None, "lines": [(i, lines[i - 1]) for i in range(n, min(start, len(lines) + 1))]})
        segments.append({"chunk": c, "lines": [(i, lines[i - 1]) for i in range(start, min(end, len(lines)) + 1)]})
        n = max(n, end + 1)
    if n <= len(lines):
        segments.append({"chunk": None, "lines": [(i, lines[i - 1]) for i in range(n, len(lines) + 1)]})
    return segments


def pick_chunk(chunks: Sequence[dict], start: int, end: int) -> tuple[dict | None, bool]:
    """The chunk a deep link names: the exact span, else the one covering its first line. (chunk, exact)."""
    for c in chunks:
        if int(c["start_line"]) == start and int(c["end_line"]) == end:
            return c, True
    for c in chunks:
        if int(c["start_line"]) <= start <= int(c["end_line"]):
            return c, False
    return None, False


def outdated_view(analysis_id: str, created_at: Any, sha256: str, versions: Sequence[FileVersionRow]) -> dict | None:
    """A later analysis of the same project whose copy of this file differs (or lacks it)."""
    for v in versions:  # newest first
        if v.analysis_id == analysis_id:
            return None
        if created_at is not None and v.created_at is not None and v.created_at <= created_at:
            continue
        if v.sha256 != sha256:
            return {"analysis_id": v.analysis_id, "created_at": v.created_at, "sha256": v.sha256}
    return None


def candidate_rows(hits: Sequence[dict], judgment: dict | None) -> list[dict]:
    """The candidate table: every hit with each component score, its rank by
    that component within its table's hits, the fused score and its rank, and
    whether the judgment cites it (relevant evidence or a note's basis)."""
    cited = set()
    basis = set()
    for e in (judgment or {}).get("evidence", []) or []:
        if e.get("relevant"):
            cited.add(e.get("record_id", ""))
    for n in (judgment or {}).get("migration_notes", []) or []:
        if n.get("basis_record_id"):
            basis.add(n["basis_record_id"])
    rows = []
    for i, h in enumerate(hits):
        comp = h.get("component_scores") or {}
        rows.append(
            {
                "table": h.get("table") or h.get("table_name", ""),
                "record_id": h.get("record_id", ""),
                "title": h.get("title", ""),
                "fused": float(h.get("score") or 0),
                "position": i + 1,
                "scores": {k: (None if comp.get(k) is None else float(comp[k])) for k in SCORE_KEYS},
                "ranks": {},
                "cited": h.get("record_id", "") in cited,
                "basis": h.get("record_id", "") in basis,
            }
        )
    by_table: dict[str, list[dict]] = {}
    for r in rows:
        by_table.setdefault(r["table"], []).append(r)
    for group in by_table.values():
        for key in SCORE_KEYS + ("fused",):
            scored = [r for r in group if (r["fused"] if key == "fused" else r["scores"][key]) is not None]
            scored.sort(key=lambda r: (-(r["fused"] if key == "fused" else r["scores"][key]), r["record_id"]))
            for rank, r in enumerate(scored, 1):
                r["ranks"][key] = rank
    return rows


def sort_candidates(rows: Sequence[dict], key: str, descending: bool = True) -> list[dict]:
    """Sort by a score column (missing scores last) or by table/record/title."""
    if key in SCORE_KEYS:
        present = [r for r in rows if r["scores"][key] is not None]
        missing = [r for r in rows if r["scores"][key] is None]
        return sorted(present, key=lambda r: r["scores"][key], reverse=descending) + missing
    if key == "fused":
        return sorted(rows, key=lambda r: r["fused"], reverse=descending)
    if key in ("table", "record_id", "title"):
        return sorted(rows, key=lambda r: r[key], reverse=descending)
    raise ValueError(f"no column {key!r}")


def threshold_candidates(rows: Sequence[dict], min_fused: float) -> list[dict]:
    return [r for r in rows if r["fused"] >= min_fused]


def tracking_view(project_id: str, source_file: str, sha256: str, chunk: dict, analysis_id: str) -> list[tuple[str, str]]:
    """What travels with a chunk for the screen, logs and resume only: never a search criterion."""
    return [
        ("analysis", analysis_id),
        ("project_id", project_id),
        ("source_file", source_file),
        ("source_sha256", sha256),
        ("chunk_id", chunk.get("chunk_id", "")),
        ("chunk_order", str(chunk.get("chunk_order", ""))),
        ("chunk_kind", chunk.get("chunk_kind", "")),
    ]


def judgment_view(row: WebFileChunkRow) -> dict | None:
    """The judgment card of one chunk from a ``Store.web_file_chunks`` row."""
    j = row.judgment
    if not j:
        return None
    return {
        "signal": j.get("signal", ""),
        "needs_migration": bool(j.get("needs_migration")),
        "confidence": float(j.get("confidence") or 0),
        "explanation": j.get("explanation", ""),
        "answer": j.get("answer", ""),
        "notes": [
            {
                "line": n.get("line", 0),
                "old": n.get("old", ""),
                "new": n.get("new", ""),
                "basis_record_id": n.get("basis_record_id", ""),
            }
            for n in j.get("migration_notes") or []
        ],
        "judge": row.judge_kind or j.get("judge_kind", ""),
        "model": row.model or j.get("model", ""),
        "prompt_version": row.prompt_version or j.get("prompt_version", ""),
        "prompt_tokens": int(row.prompt_tokens or 0),
        "completion_tokens": int(row.completion_tokens or 0),
        "llm_calls": int(row.llm_calls or 0),
        "latency_ms": round(float(row.latency_ms or 0), 1),
        "route": row.route or "",
        "cached": bool(row.cached),
        "status": row.judgment_status or "ok",
        "error": row.judgment_error or "",
        "raw": j,
    }


# ---------------------------------------------------------------- exports


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return "; ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}={_cell(v)}" for k, v in value.items())
    text = str(value)
    # A spreadsheet runs a cell that starts with = + - @ as a formula: file
    # names and chunk text come from the analysed project, so such cells are
    # quoted with a leading apostrophe.
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        text = "'" + text
    return text


def to_csv(rows: Iterable[dict], columns: Sequence[str]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in columns])
    return out.getvalue()


EXPORT_COLUMNS = {
    "analyses": (
        "analysis_id",
        "project_id",
        "status",
        "label",
        "confidence",
        "source_origin",
        "input_ref",
        "files_total",
        "files_included",
        "created_at",
        "finished_at",
    ),
    "files": ("source_file", "source_kind", "status", "excluded_reason", "error", "chunk_count", "sha256", "size"),
    "chunks": (
        "source_file",
        "range",
        "status_words",
        "chunk_id",
        "chunk_kind",
        "name",
        "signal",
        "needs_migration",
        "confidence",
        "migration_notes",
        "last_error",
    ),
    "candidates": (
        "position",
        "table",
        "record_id",
        "title",
        "vector",
        "vector_rank",
        "keys",
        "keys_rank",
        "text",
        "text_rank",
        "trigram",
        "trigram_rank",
        "fused",
        "fused_rank",
        "cited",
        "basis",
    ),
}


def export_columns(what: str) -> tuple[str, ...]:
    """The columns of an export list; a chunk list also carries each chunk's lines."""
    return EXPORT_COLUMNS[what] + (("start_line", "end_line") if what == "chunks" else ())


def candidate_export(rows: Sequence[dict]) -> list[dict]:
    out = []
    for r in rows:
        flat = {k: r[k] for k in ("position", "table", "record_id", "title", "fused", "cited", "basis")}
        for k in SCORE_KEYS:
            flat[k] = r["scores"][k]
            flat[f"{k}_rank"] = r["ranks"].get(k)
        flat["fused_rank"] = r["ranks"].get("fused")
        out.append(flat)
    return out


def chunk_export(views: Sequence[dict]) -> list[dict]:
    return [
        {
            **{k: v[k] for k in EXPORT_COLUMNS["chunks"] if k != "migration_notes"},
            "start_line": v["start_line"],
            "end_line": v["end_line"],
            "migration_notes": [f"line {n['line']}: {n['old']} -> {n['new']}" for n in v["migration_notes"]],
        }
        for v in views
    ]


# ---------------------------------------------------------------- proposed patch of one file


def _chunk_at(chunks: Sequence[dict], line: int) -> dict | None:
    return next((c for c in chunks if c["start_line"] <= line <= c["end_line"]), None)


def patch_view(entry: dict | None, chunks: Sequence[dict], analysis_id: str, source_file: str) -> dict | None:
    """One file's part of the analysis's patch (``pipeline.patch.patch_result_json``) for the file page.

    Each hunk keeps its diff lines (kind ``add``, ``del``, ``ctx`` or ``head``) and its changes with their basis;
    a change's record links to the candidate row of the chunk holding its line when the retriever found that
    record there, otherwise to "Why not retrieved?" for it on that chunk. A TODO links to the chunk holding its
    line. None when the patch neither changes the file nor leaves it a TODO.
    """
    if entry is None or not (entry["hunks"] or entry["todos"]):
        return None
    hunks = []
    for h in entry["hunks"]:
        lines = []
        for raw in h["text"].splitlines():
            kind = {"@": "head", "+": "add", "-": "del", "\\": "ctx"}.get(raw[:1], "ctx")
            lines.append({"kind": kind, "text": raw})
        # The first line the hunk changes (its context lines come first).
        first = h["old_start"] + next((i for i, ln in enumerate(lines[1:]) if ln["kind"] in ("add", "del")), 0)
        hunk_chunk = _chunk_at(chunks, first)
        changes = []
        for c in h["changes"]:
            href = ""
            rid = c["record_id"]
            chunk = _chunk_at(chunks, c.get("line") or first)
            if rid and chunk is not None:
                pos = chunk.get("candidate_ids", {}).get(rid)
                if pos:
                    href = f"#cand-{chunk['range']}-{pos}"
                else:
                    href = (
                        f"/a/{quote(analysis_id, safe='')}/f/{quote(source_file, safe='/')}"
                        f"?chunk={quote(chunk['chunk_id'], safe='')}&why={quote(rid, safe='')}#{chunk['range']}"
                    )
            changes.append({**c, "record_href": href})
        hunks.append(
            {
                "hunk": h["hunk"],
                "confidence": h["confidence"],
                "lines": lines,
                "changes": changes,
                "chunk_range": hunk_chunk["range"] if hunk_chunk else "",
            }
        )
    todos = []
    for t in entry["todos"]:
        chunk = _chunk_at(chunks, t["line"])
        todos.append({**t, "chunk_range": chunk["range"] if chunk else ""})
    return {"hunks": hunks, "todos": todos, "kept": entry["kept"], "edits": entry["edits"], "changed": entry["changed"]}


def template_environment(folder: str) -> jinja2.Environment:
    """The web screen's templates in ``folder``: autoescaped, strict about missing values, with the view helpers
    and tables the templates use as globals."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        file_href=file_href,
        file_meta_text=file_meta,
        statuses=STATUSES,
        status_words=STATUS_WORDS,
        signals=SIGNALS,
        legend=SCORE_LEGEND,
        score_keys=SCORE_KEYS,
    )
    return env
