"""The stable JSON shape of an analysis (CLI --json, web API), and the classified export tree.

Add fields, never rename them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from godot_rag import convert


def result_to_json(result) -> dict:
    """The stable --json shape. Fields may be added, never renamed."""
    verdict = result.verdict
    out = {
        "analysis_id": result.analysis_id,
        "project_id": result.project_id,
        "prompt": result.prompt,
        "status": result.status,
        "verdict": {
            "label": verdict.label,
            "confidence": verdict.confidence,
            "counts": dict(verdict.counts),
            "basis": list(verdict.basis),
        },
        "files": [
            {
                "source_file": f.source_file,
                "source_kind": f.source_kind,
                "status": f.status,
                "excluded_reason": f.excluded_reason,
                "source_sha256": f.source_sha256,
                "chunk_count": f.chunk_count,
                "error": f.error,
                "errors": [convert.to_dict(e) for e in f.errors],
            }
            for f in result.files
        ],
        "chunks": [],
        "dead_letters": [convert.to_dict(d) for d in result.dead_letters],
        "judge_stats": judge_stats_json(result.judge_stats),
    }
    for c in result.chunks:
        hit_scores = {(h.table, h.record_id): h.score for h in c.hits}
        j = c.judgment
        out["chunks"].append(
            {
                "source_file": c.trace.source_file,
                "chunk_id": c.trace.chunk_id,
                "chunk_order": c.trace.chunk_order,
                "chunk_kind": c.trace.chunk_kind,
                "start_line": c.span.start_line,
                "end_line": c.span.end_line,
                "status": c.status,
                "signal": j.signal,
                "needs_migration": j.needs_migration,
                "confidence": j.confidence,
                # What the judgment rests on ("godot3:syntax", "godot3:file_format", ...); empty from a model.
                "evidence_kinds": list(j.evidence_kinds),
                "judge": {
                    "kind": j.judge_kind,
                    "model": j.model,
                    "prompt_version": j.prompt_version,
                    "status": j.status,
                    "route": j.route,
                    "cached": j.cached,
                    "latency_ms": j.latency_ms,
                    "prompt_tokens": j.prompt_tokens,
                    "completion_tokens": j.completion_tokens,
                    "llm_calls": j.llm_calls,
                },
                "explanation": j.explanation,
                "answer": j.answer,
                "judgment_error": j.error,
                # A model's raw reply is kept for every LLM judgment; it is what a failed one leaves behind.
                "raw_output": j.raw_output,
                # score: the fused retrieval score of the evidence record for this chunk.
                "evidence": [
                    {
                        "table": e.table,
                        "record_id": e.record_id,
                        "score": hit_scores.get((e.table, e.record_id), 0.0),
                        "relevant": e.relevant,
                        "why": e.why,
                    }
                    for e in j.evidence
                ],
                "migration_notes": [
                    {"line": n.line, "old": n.old, "new": n.new, "basis_record_id": n.basis_record_id} for n in j.migration_notes
                ],
                "retriever_query": {
                    "query_text": c.retriever_query.query_text,
                    "query_terms": list(c.retriever_query.query_terms),
                    "prompt_terms": list(c.retriever_query.prompt_terms),
                },
                "hits": [
                    {
                        "table": h.table,
                        "record_id": h.record_id,
                        "title": h.title,
                        "score": h.score,
                        "component_scores": dict(h.component_scores),
                    }
                    for h in c.hits
                ],
                "last_error": c.last_error,
            }
        )
    return out


def judge_stats_json(stats) -> dict:
    return {
        "judged": stats.judged,
        "failed": stats.failed,
        "llm_calls": stats.llm_calls,
        "llm_calls_saved": stats.llm_calls_saved,
        "cached": stats.cached,
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "by_route": dict(stats.by_route),
        "cascade": stats.cascade,
    }


# ---------------------------------------------------------------- classified export
#
# DIR/<label>/<project_slug>/verdict.json, chunks.jsonl, report.md and DIR/dataset.jsonl
# (docs/export.md). Written from what the gateway's API returns (AnalysisResult and
# one ChunkTraceDetail per chunk), so a remote stack exports the same way.

PREFERENCE_RULE = "chosen = the judgment version that is current for the analysis; rejected = another version that disagrees"


def project_slug(project_id: str) -> str:
    """A folder name for a project id (paths, URLs, pasted://...): letters, digits, '.', '_' and '-'."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", project_id).strip("-.")
    return slug[:120] or "project"


def _judgment_json(j) -> dict:
    return {
        "signal": j.signal,
        "needs_migration": j.needs_migration,
        "confidence": j.confidence,
        "evidence": [{"table": e.table, "record_id": e.record_id, "relevant": e.relevant, "why": e.why} for e in j.evidence],
        "migration_notes": [
            {"line": n.line, "old": n.old, "new": n.new, "basis_record_id": n.basis_record_id} for n in j.migration_notes
        ],
        "explanation": j.explanation,
        "answer": j.answer,
        "evidence_kinds": list(j.evidence_kinds),
        "status": j.status or "ok",
        "error": j.error,
    }


def _judge_json(j) -> dict:
    return {"judge": j.judge_kind, "model": j.model, "prompt_version": j.prompt_version, "route": j.route}


def _hits_json(hits, with_content: bool = False) -> list[dict]:
    out = []
    for h in hits:
        row = {
            "table": h.table,
            "record_id": h.record_id,
            "title": h.title,
            "score": h.score,
            "component_scores": dict(sorted(h.component_scores.items())),
        }
        if with_content:
            row["content"] = h.content
        out.append(row)
    return out


def _trace_json(t) -> dict:
    return {
        "project_id": t.project_id,
        "source_file": t.source_file,
        "source_sha256": t.source_sha256,
        "chunk_id": t.chunk_id,
        "chunk_order": t.chunk_order,
        "chunk_kind": t.chunk_kind,
    }


def chunk_record(result, detail) -> dict:
    """One line of chunks.jsonl: the trace, the query, the hits with their scores, the judgment and its notes."""
    current = next((v for v in detail.judgments if v.current), None)
    judgment = current.judgment if current is not None else None
    return {
        "trace": _trace_json(detail.trace),
        "span": {"start_line": detail.span.start_line, "end_line": detail.span.end_line},
        "status": detail.status,
        "trace_id": detail.trace_id,
        "query": {
            "query_text": detail.query.query_text,
            "query_terms": list(detail.query.query_terms),
            "prompt_terms": list(detail.query.prompt_terms),
            "intent": detail.query.intent,
        },
        "hits": _hits_json(detail.hits),
        "judgment": None
        if current is None
        else {**_judgment_json(current.judgment), **_judge_json(current.judgment), "version_id": current.version_id},
        "notes": []
        if judgment is None
        else [{"line": n.line, "old": n.old, "new": n.new, "basis_record_id": n.basis_record_id} for n in judgment.migration_notes],
        "judgment_versions": [
            {
                "version_id": v.version_id,
                "retrieval_version": v.retrieval_version,
                "current": v.current,
                "signal": v.judgment.signal,
                "needs_migration": v.judgment.needs_migration,
                "status": v.judgment.status or "ok",
                **_judge_json(v.judgment),
            }
            for v in detail.judgments
        ],
    }


def verdict_record(result) -> dict:
    v = result.verdict
    files = list(result.files)
    return {
        "analysis_id": result.analysis_id,
        "project_id": result.project_id,
        "prompt": result.prompt,
        "status": result.status,
        "verdict": {
            "label": v.label or "undetermined",
            "confidence": v.confidence,
            "counts": dict(sorted(v.counts.items())),
            "basis": list(v.basis),
        },
        "files": {
            "total": len(files),
            "included": sum(1 for f in files if f.status != "excluded"),
            "excluded": sum(1 for f in files if f.status == "excluded"),
            "failed": sum(1 for f in files if f.status == "failed"),
        },
        "chunks": {"total": len(result.chunks), "failed": sum(1 for c in result.chunks if c.status == "failed")},
    }


def report_markdown(result, details) -> str:
    """The readable report: verdict, its basis, migration notes grouped by file, excluded files with reasons."""
    v = result.verdict
    lines = [
        f"# {result.project_id}",
        "",
        f"- analysis: `{result.analysis_id}`",
        f"- question: {result.prompt}",
        f"- status: {result.status}",
        f"- verdict: **{v.label or 'undetermined'}** (confidence {v.confidence:.2f})",
        "- counts: " + (", ".join(f"{k} {n}" for k, n in sorted(v.counts.items())) or "none"),
        "",
        "## Basis",
        "",
    ]
    lines += [f"- {b}" for b in v.basis] or ["- (none recorded)"]
    lines += ["", "## Migration notes by file", ""]
    by_file: dict[str, list[str]] = {}
    for d in details:
        current = next((j for j in d.judgments if j.current), None)
        if current is None:
            continue
        for n in current.judgment.migration_notes:
            basis = f" (basis `{n.basis_record_id}`)" if n.basis_record_id else ""
            by_file.setdefault(d.trace.source_file, []).append(f"- line {n.line}: `{n.old}` -> `{n.new}`{basis}")
    if not by_file:
        lines.append("No migration notes.")
    for source_file in sorted(by_file):
        lines += [f"### {source_file}", "", *by_file[source_file], ""]
    lines += ["", "## Excluded files", ""]
    excluded = [f for f in result.files if f.status == "excluded"]
    lines += [f"- `{f.source_file}`: {f.excluded_reason}" for f in excluded] or ["None."]
    failed_files = [f for f in result.files if f.status == "failed"]
    failed_chunks = [c for c in result.chunks if c.status == "failed"]
    if failed_files or failed_chunks:
        lines += ["", "## Failures", ""]
        lines += [f"- file `{f.source_file}`: {f.error}" for f in failed_files]
        lines += [f"- chunk `{c.trace.chunk_id}`: {c.last_error}" for c in failed_chunks]
    return "\n".join(lines).rstrip() + "\n"


def dataset_records(result, details) -> list[dict]:
    """dataset.jsonl lines of one analysis: a "judgment" record per chunk's current ok judgment, and a
    "preference" record per pair of judgment versions of a chunk that disagree (see PREFERENCE_RULE)."""
    records: list[dict] = []
    for d in details:
        base = {
            "analysis_id": result.analysis_id,
            "project_id": result.project_id,
            "chunk_id": d.trace.chunk_id,
            "source_file": d.trace.source_file,
            "prompt": result.prompt,
            "chunk_text": d.text,
        }

        def evidence_of(version, d=d):
            by_version = {r.version_id: r.hits for r in d.retrievals}
            return _hits_json(by_version.get(version.retrieval_version, d.hits), with_content=True)

        ok = [v for v in d.judgments if (v.judgment.status or "ok") == "ok" and v.judgment.signal]
        current = next((v for v in ok if v.current), None)
        if current is not None:
            records.append(
                {
                    "record_type": "judgment",
                    **base,
                    "evidence": evidence_of(current),
                    "judgment": _judgment_json(current.judgment),
                    **_judge_json(current.judgment),
                    "version_id": current.version_id,
                }
            )
        chosen = current or (ok[0] if ok else None)  # versions come newest first
        if chosen is None:
            continue
        for other in ok:
            if other.version_id == chosen.version_id:
                continue
            if (other.judgment.signal, other.judgment.needs_migration) == (chosen.judgment.signal, chosen.judgment.needs_migration):
                continue
            records.append(
                {
                    "record_type": "preference",
                    **base,
                    "rule": PREFERENCE_RULE,
                    "evidence": evidence_of(chosen),
                    "chosen": {
                        "version_id": chosen.version_id,
                        "judgment": _judgment_json(chosen.judgment),
                        **_judge_json(chosen.judgment),
                    },
                    "rejected": {
                        "version_id": other.version_id,
                        "judgment": _judgment_json(other.judgment),
                        **_judge_json(other.judgment),
                        # Judged on other evidence (another retrieval version): that evidence, too.
                        "evidence": evidence_of(other) if other.retrieval_version != chosen.retrieval_version else None,
                    },
                }
            )
    return records


def write_classified(bundles, out_dir: Path) -> list[Path]:
    """Write each (AnalysisResult, [ChunkTraceDetail]) under out_dir/<label>/<project_slug>/, and out_dir/dataset.jsonl.

    Two analyses of one project under one label get "<slug>-<analysis id prefix>" for the second.
    Returns the files written, in order.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    used: set[tuple[str, str]] = set()
    dataset: list[dict] = []
    for result, details in bundles:
        label = result.verdict.label or "undetermined"
        slug = project_slug(result.project_id)
        if (label, slug) in used:
            slug = f"{slug}-{result.analysis_id[:12]}"
        used.add((label, slug))
        folder = out_dir / label / slug
        folder.mkdir(parents=True, exist_ok=True)
        by_id = {d.trace.chunk_id: d for d in details}
        ordered = [by_id[c.trace.chunk_id] for c in result.chunks if c.trace.chunk_id in by_id]
        (folder / "verdict.json").write_text(
            json.dumps(verdict_record(result), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        with (folder / "chunks.jsonl").open("w", encoding="utf-8") as fh:
            for d in ordered:
                fh.write(json.dumps(chunk_record(result, d), ensure_ascii=False) + "\n")
        (folder / "report.md").write_text(report_markdown(result, ordered), encoding="utf-8")
        written += [folder / "verdict.json", folder / "chunks.jsonl", folder / "report.md"]
        dataset += dataset_records(result, ordered)
    path = out_dir / "dataset.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for record in dataset:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    written.append(path)
    return written
