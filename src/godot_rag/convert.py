"""Domain dataclasses <-> protobuf messages (the wire contract in protos/)."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from godot_rag.domain import models as m
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb


def to_dict(msg: Message) -> dict:
    return json_format.MessageToDict(msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


M = TypeVar("M", bound=Message)


def from_dict(data: dict, cls: type[M]) -> M:
    return json_format.ParseDict(data, cls(), ignore_unknown_fields=True)


def span_to_pb(span: m.Span) -> pb.Span:
    return pb.Span(start_line=span.start_line, end_line=span.end_line, start_byte=span.start_byte, end_byte=span.end_byte)


def span_from_pb(span: pb.Span) -> m.Span:
    return m.Span(span.start_line, span.end_line, span.start_byte, span.end_byte)


def chunk_to_pb(c: m.Chunk) -> pb.Chunk:
    return pb.Chunk(
        chunk_id=c.chunk_id,
        chunk_order=c.chunk_order,
        chunk_kind=c.chunk_kind,
        node_kind=c.node_kind,
        name=c.name,
        span=span_to_pb(c.span),
        code_text=c.code_text,
        symbol_candidates=list(c.symbol_candidates),
        api_call_candidates=list(c.api_call_candidates),
        reference_candidates=list(c.reference_candidates),
        code_mask=c.code_mask,
        surrounding_context=c.surrounding_context,
    )


def chunk_from_pb(c: pb.Chunk) -> m.Chunk:
    return m.Chunk(
        chunk_id=c.chunk_id,
        chunk_order=c.chunk_order,
        chunk_kind=c.chunk_kind,
        node_kind=c.node_kind,
        name=c.name,
        span=span_from_pb(c.span),
        code_text=c.code_text,
        symbol_candidates=tuple(c.symbol_candidates),
        api_call_candidates=tuple(c.api_call_candidates),
        reference_candidates=tuple(c.reference_candidates),
        code_mask=c.code_mask,
        surrounding_context=c.surrounding_context,
    )


def chunk_from_dict(d: dict) -> m.Chunk:
    """``chunk_from_pb(from_dict(d, pb.Chunk))`` without the protobuf round trip: the retriever and the
    judge read a stored chunk for every message (json_format's parser was 7 % of the judge's time)."""
    span = d.get("span") or {}
    return m.Chunk(
        chunk_id=d.get("chunk_id") or "",
        chunk_order=int(d.get("chunk_order") or 0),
        chunk_kind=d.get("chunk_kind") or "",
        node_kind=d.get("node_kind") or "",
        name=d.get("name") or "",
        span=m.Span(
            int(span.get("start_line") or 0),
            int(span.get("end_line") or 0),
            int(span.get("start_byte") or 0),
            int(span.get("end_byte") or 0),
        ),
        code_text=d.get("code_text") or "",
        symbol_candidates=tuple(d.get("symbol_candidates") or ()),
        api_call_candidates=tuple(d.get("api_call_candidates") or ()),
        reference_candidates=tuple(d.get("reference_candidates") or ()),
        code_mask=d.get("code_mask") or "",
        surrounding_context=d.get("surrounding_context") or "",
    )


def chunking_to_pb(r: m.ChunkingResult, project_id: str = "") -> pb.ChunkingOutput:
    return pb.ChunkingOutput(
        project_id=project_id,
        source_file=r.source_file,
        source_kind=r.source_kind,
        source_sha256=r.source_sha256,
        status=r.status,
        chunks=[chunk_to_pb(c) for c in r.chunks],
        errors=[
            pb.SourceError(line=e.line, column=e.column, end_line=e.end_line, end_column=e.end_column, message=e.message)
            for e in r.errors
        ],
        producer_version=r.producer_version,
    )


def query_to_pb(q: m.RetrieverQuery) -> pb.RetrieverQuery:
    return pb.RetrieverQuery(
        query_text=q.query_text,
        query_terms=list(q.query_terms),
        raw_chunk_text=q.raw_chunk_text,
        symbol_candidates=list(q.symbol_candidates),
        api_call_candidates=list(q.api_call_candidates),
        reference_candidates=list(q.reference_candidates),
        prompt_terms=list(q.prompt_terms),
        intent=q.intent,
        direct_chunk=q.direct_chunk,
    )


def query_to_dict(q: m.RetrieverQuery) -> dict:
    """``to_dict(query_to_pb(q))`` without the protobuf round trip: the retriever stores every chunk's query."""
    return {
        "query_text": q.query_text,
        "query_terms": list(q.query_terms),
        "raw_chunk_text": q.raw_chunk_text,
        "symbol_candidates": list(q.symbol_candidates),
        "api_call_candidates": list(q.api_call_candidates),
        "reference_candidates": list(q.reference_candidates),
        "prompt_terms": list(q.prompt_terms),
        "intent": q.intent,
        "direct_chunk": bool(q.direct_chunk),
    }


def query_from_pb(q: pb.RetrieverQuery) -> m.RetrieverQuery:
    return m.RetrieverQuery(
        query_text=q.query_text,
        query_terms=tuple(q.query_terms),
        raw_chunk_text=q.raw_chunk_text,
        symbol_candidates=tuple(q.symbol_candidates),
        api_call_candidates=tuple(q.api_call_candidates),
        reference_candidates=tuple(q.reference_candidates),
        prompt_terms=tuple(q.prompt_terms),
        intent=q.intent,
        direct_chunk=q.direct_chunk,
    )


def hit_to_pb(h: m.RetrievalHit) -> pb.RetrievalHit:
    return pb.RetrievalHit(
        table=h.table_name,
        record_id=h.record_id,
        title=h.title,
        content=h.content,
        score=h.score,
        component_scores={k: float(v) for k, v in h.component_scores.items()},
        metadata_json=h.metadata_json or m.encode_metadata(h.metadata),
    )


def _json_double(x: float) -> float | str:
    """A double as protobuf's JSON mapping writes it (non-finite values as strings)."""
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def hit_to_dict(h: m.RetrievalHit) -> dict:
    """``to_dict(hit_to_pb(h))`` without the protobuf round trip: the retriever stores a dozen hits a chunk."""
    return {
        "table": h.table_name,
        "record_id": h.record_id,
        "title": h.title,
        "content": h.content,
        "score": _json_double(float(h.score)),
        "component_scores": {k: _json_double(float(v)) for k, v in h.component_scores.items()},
        "metadata_json": h.metadata_json or m.encode_metadata(h.metadata),
    }


def hit_from_dict(d: dict) -> m.RetrievalHit:
    """``hit_from_pb(from_dict(d, pb.RetrievalHit))`` without the protobuf round trip: the judge reads every hit."""
    metadata_json = d.get("metadata_json") or ""
    return m.RetrievalHit(
        table_name=d.get("table") or "",
        record_id=d.get("record_id") or "",
        score=float(d.get("score") or 0.0),
        title=d.get("title") or "",
        content=d.get("content") or "",
        metadata=_decoded_metadata(metadata_json) if metadata_json else {},
        component_scores={k: float(v) for k, v in (d.get("component_scores") or {}).items()},
        metadata_json=metadata_json,
    )


@lru_cache(maxsize=4096)
def _decoded_metadata(metadata_json: str) -> dict:
    """The judge reads the same records' metadata for chunk after chunk: each text is decoded once.
    The dict is shared between hits and never modified (as the retriever's record details)."""
    return json.loads(metadata_json)


def hit_from_pb(h: pb.RetrievalHit) -> m.RetrievalHit:
    return m.RetrievalHit(
        table_name=h.table,
        record_id=h.record_id,
        score=h.score,
        title=h.title,
        content=h.content,
        metadata=json.loads(h.metadata_json) if h.metadata_json else {},
        component_scores=dict(h.component_scores),
    )


def judgment_to_pb(j: m.Judgment) -> pb.Judgment:
    return pb.Judgment(
        signal=j.signal,
        needs_migration=j.needs_migration,
        confidence=j.confidence,
        evidence=[pb.EvidenceUse(table=e.table, record_id=e.record_id, relevant=e.relevant, why=e.why) for e in j.evidence],
        migration_notes=[
            pb.MigrationNote(line=n.line, old=n.old, new=n.new, basis_record_id=n.basis_record_id) for n in j.migration_notes
        ],
        explanation=j.explanation,
        judge_kind=j.judge_kind,
        model=j.model,
        prompt_version=j.prompt_version,
        answer=j.answer,
        raw_output=j.raw_output,
        evidence_kinds=list(j.evidence_kinds),
        status=j.status,
        error=j.error,
        prompt_tokens=j.prompt_tokens,
        completion_tokens=j.completion_tokens,
        latency_ms=j.latency_ms,
        llm_calls=j.llm_calls,
        route=j.route,
        cached=j.cached,
    )


def judgment_from_pb(j: pb.Judgment) -> m.Judgment:
    return m.Judgment(
        signal=j.signal,
        needs_migration=j.needs_migration,
        confidence=j.confidence,
        evidence=tuple(m.EvidenceUse(e.table, e.record_id, e.relevant, e.why) for e in j.evidence),
        migration_notes=tuple(m.MigrationNote(n.line, n.old, n.new, n.basis_record_id) for n in j.migration_notes),
        explanation=j.explanation,
        judge_kind=j.judge_kind,
        model=j.model,
        prompt_version=j.prompt_version,
        answer=j.answer,
        raw_output=j.raw_output,
        status=j.status or m.JUDGMENT_OK,
        error=j.error,
        prompt_tokens=j.prompt_tokens,
        completion_tokens=j.completion_tokens,
        latency_ms=j.latency_ms,
        llm_calls=j.llm_calls,
        route=j.route,
        cached=j.cached,
        evidence_kinds=tuple(j.evidence_kinds),
    )


def judgment_to_dict(j: m.Judgment) -> dict:
    """``to_dict(judgment_to_pb(j))`` without the protobuf round trip: the judge stores one a chunk."""
    return {
        "signal": j.signal,
        "needs_migration": bool(j.needs_migration),
        "confidence": _json_double(float(j.confidence)),
        "evidence": [{"table": e.table, "record_id": e.record_id, "relevant": bool(e.relevant), "why": e.why} for e in j.evidence],
        "migration_notes": [
            {"line": int(n.line), "old": n.old, "new": n.new, "basis_record_id": n.basis_record_id} for n in j.migration_notes
        ],
        "explanation": j.explanation,
        "judge_kind": j.judge_kind,
        "model": j.model,
        "prompt_version": j.prompt_version,
        "answer": j.answer,
        "raw_output": j.raw_output,
        "status": j.status,
        "error": j.error,
        "prompt_tokens": int(j.prompt_tokens),
        "completion_tokens": int(j.completion_tokens),
        "latency_ms": _json_double(float(j.latency_ms)),
        "llm_calls": int(j.llm_calls),
        "route": j.route,
        "cached": bool(j.cached),
        "evidence_kinds": list(j.evidence_kinds),
    }


def judgment_from_dict(d: dict) -> m.Judgment:
    """``judgment_from_pb(from_dict(d, pb.Judgment))`` without the protobuf round trip (a reused judgment)."""
    return m.Judgment(
        signal=d.get("signal") or "",
        needs_migration=bool(d.get("needs_migration", False)),
        confidence=float(d.get("confidence") or 0.0),
        evidence=tuple(
            m.EvidenceUse(e.get("table") or "", e.get("record_id") or "", bool(e.get("relevant", False)), e.get("why") or "")
            for e in d.get("evidence") or ()
        ),
        migration_notes=tuple(
            m.MigrationNote(int(n.get("line") or 0), n.get("old") or "", n.get("new") or "", n.get("basis_record_id") or "")
            for n in d.get("migration_notes") or ()
        ),
        explanation=d.get("explanation") or "",
        judge_kind=d.get("judge_kind") or "",
        model=d.get("model") or "",
        prompt_version=d.get("prompt_version") or "",
        answer=d.get("answer") or "",
        raw_output=d.get("raw_output") or "",
        status=d.get("status") or m.JUDGMENT_OK,
        error=d.get("error") or "",
        prompt_tokens=int(d.get("prompt_tokens") or 0),
        completion_tokens=int(d.get("completion_tokens") or 0),
        latency_ms=float(d.get("latency_ms") or 0.0),
        llm_calls=int(d.get("llm_calls") or 0),
        route=d.get("route") or "",
        cached=bool(d.get("cached", False)),
        evidence_kinds=tuple(d.get("evidence_kinds") or ()),
    )


def request_from_pb(r: pb.JudgmentRequest) -> m.JudgmentRequest:
    chunk = chunk_from_pb(r.chunk)
    if not chunk.code_text and r.chunk_text:
        chunk = m.Chunk(
            chunk.chunk_id or r.chunk_id,
            chunk.chunk_order or r.chunk_order,
            chunk.chunk_kind or r.chunk_kind,
            chunk.node_kind,
            chunk.name,
            chunk.span,
            r.chunk_text,
            chunk.symbol_candidates,
            chunk.api_call_candidates,
            chunk.reference_candidates,
            chunk.code_mask,
            chunk.surrounding_context,
        )
    if r.surrounding_context and not chunk.surrounding_context:
        chunk = m.Chunk(
            chunk.chunk_id,
            chunk.chunk_order,
            chunk.chunk_kind,
            chunk.node_kind,
            chunk.name,
            chunk.span,
            chunk.code_text,
            chunk.symbol_candidates,
            chunk.api_call_candidates,
            chunk.reference_candidates,
            chunk.code_mask,
            r.surrounding_context,
        )
    return m.JudgmentRequest(
        prompt=r.prompt,
        chunk=chunk,
        evidence=tuple(hit_from_pb(h) for h in r.retrieved_evidence),
        source_kind=r.source_kind,
        intent=r.intent,
        declared_names=frozenset(r.declared_names),
        judgment_contract=r.judgment_contract,
        project_id=r.project_id,
        source_file=r.source_file,
        project_symbols=r.project_symbols,
    )


def request_to_pb(r: m.JudgmentRequest) -> pb.JudgmentRequest:
    c = r.chunk
    return pb.JudgmentRequest(
        prompt=r.prompt,
        project_id=r.project_id,
        source_file=r.source_file,
        chunk_id=c.chunk_id,
        chunk_order=c.chunk_order,
        chunk_kind=c.chunk_kind,
        chunk_text=c.code_text,
        surrounding_context=c.surrounding_context,
        retrieved_evidence=[hit_to_pb(h) for h in r.evidence],
        judgment_contract=r.judgment_contract,
        chunk=chunk_to_pb(c),
        source_kind=r.source_kind,
        declared_names=sorted(r.declared_names),
        intent=r.intent,
        project_symbols=r.project_symbols,
    )


def patch_to_pb(analysis_id: str, doc: dict, basis_jsonl: str, sha256: dict[str, str]) -> spb.PatchResponse:
    """``pipeline.patch.patch_result_json`` of an analysis's patch -> PatchResponse (patched text of changed files only)."""
    response = spb.PatchResponse(analysis_id=analysis_id, diff=doc["diff"], basis_jsonl=basis_jsonl)
    response.summary.update({k: int(v) for k, v in doc["summary"].items()})
    for f in doc["files"]:
        pf = spb.PatchFile(
            source_file=f["file"],
            sha256=sha256.get(f["file"], ""),
            changed=f["changed"],
            edits=f["edits"],
            patched_text=f["patched"] if f["changed"] else "",
        )
        for h in f["hunks"]:
            pf.hunks.append(
                spb.PatchHunk(
                    hunk=h["hunk"],
                    old_start=h["old_start"],
                    old_len=h["old_len"],
                    new_start=h["new_start"],
                    new_len=h["new_len"],
                    text=h["text"],
                    confidence=h["confidence"],
                    changes=[
                        spb.PatchChange(
                            rule=c["rule"],
                            record_id=c["record_id"],
                            confidence=c["confidence"],
                            receiver=c.get("receiver", ""),
                            note=c.get("note", ""),
                            line=c.get("line", 0),
                        )
                        for c in h["changes"]
                    ],
                )
            )
        pf.todos.extend(
            spb.PatchTodo(line=t["line"], rule=t["rule"], symbol=t["symbol"], note=t["note"], record_id=t.get("record_id", ""))
            for t in f["todos"]
        )
        pf.kept.extend(spb.PatchKept(line=k["line"], symbol=k["symbol"], reason=k["reason"]) for k in f["kept"])
        response.files.append(pf)
    return response
