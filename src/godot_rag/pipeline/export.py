"""The stable JSON shape of an analysis (CLI --json, web API). Add fields, never rename them."""

from __future__ import annotations

from godot_rag import convert


def result_to_json(result) -> dict:
    """The stable --json shape. Fields may be added, never renamed."""
    verdict = result.verdict
    out = {
        "analysis_id": result.analysis_id,
        "project_id": result.project_id,
        "prompt": result.prompt,
        "status": result.status,
        "verdict": {"label": verdict.label, "confidence": verdict.confidence, "counts": dict(verdict.counts), "basis": list(verdict.basis)},
        "files": [
            {"source_file": f.source_file, "source_kind": f.source_kind, "status": f.status, "excluded_reason": f.excluded_reason,
             "source_sha256": f.source_sha256, "chunk_count": f.chunk_count, "error": f.error,
             "errors": [convert.to_dict(e) for e in f.errors]}
            for f in result.files
        ],
        "chunks": [],
        "dead_letters": [convert.to_dict(d) for d in result.dead_letters],
        "judge_stats": judge_stats_json(result.judge_stats),
    }
    for c in result.chunks:
        hit_scores = {(h.table, h.record_id): h.score for h in c.hits}
        j = c.judgment
        out["chunks"].append({
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
            "judge": {"kind": j.judge_kind, "model": j.model, "prompt_version": j.prompt_version, "status": j.status,
                      "route": j.route, "cached": j.cached, "latency_ms": j.latency_ms, "prompt_tokens": j.prompt_tokens,
                      "completion_tokens": j.completion_tokens, "llm_calls": j.llm_calls},
            "explanation": j.explanation,
            "answer": j.answer,
            "judgment_error": j.error,
            # A model's raw reply is kept for every LLM judgment; it is what a failed one leaves behind.
            "raw_output": j.raw_output,
            # score: the fused retrieval score of the evidence record for this chunk.
            "evidence": [{"table": e.table, "record_id": e.record_id, "score": hit_scores.get((e.table, e.record_id), 0.0),
                          "relevant": e.relevant, "why": e.why} for e in j.evidence],
            "migration_notes": [{"line": n.line, "old": n.old, "new": n.new, "basis_record_id": n.basis_record_id}
                                for n in j.migration_notes],
            "retriever_query": {"query_text": c.retriever_query.query_text, "query_terms": list(c.retriever_query.query_terms),
                                "prompt_terms": list(c.retriever_query.prompt_terms)},
            "hits": [{"table": h.table, "record_id": h.record_id, "title": h.title, "score": h.score,
                      "component_scores": dict(h.component_scores)} for h in c.hits],
            "last_error": c.last_error,
        })
    return out


def judge_stats_json(stats) -> dict:
    return {"judged": stats.judged, "failed": stats.failed, "llm_calls": stats.llm_calls, "llm_calls_saved": stats.llm_calls_saved,
            "cached": stats.cached, "prompt_tokens": stats.prompt_tokens, "completion_tokens": stats.completion_tokens,
            "by_route": dict(stats.by_route), "cascade": stats.cascade}
