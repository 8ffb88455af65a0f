"""Assemble what the API shows about an analysis from the store."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from godot_rag import convert
from godot_rag.domain.aggregation.verdict import ChunkOutcome, compute_verdict
from godot_rag.errors import NotFoundError, NotReadyError
from godot_rag.infra.rows import AnalysisRow, ChunkOutcomeRow, VerdictRow
from godot_rag.infra.store import Store
from godot_rag.stages import CHUNK_STAGES, AnalysisStatus, ChunkStatus, Stage, Status
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb

log = logging.getLogger(__name__)


def chunk_status(stages: dict | None, analysis_running: bool) -> tuple[str, str, str]:
    """(status, stage, last_error) of a chunk from its per-stage rows.

    A chunk is 'interrupted' when a stage was in progress, the analysis is
    no longer being worked on, and it never finished.
    """
    stages = stages or {}
    last_error = ""
    for stage in CHUNK_STAGES:
        row = stages.get(stage)
        if row and row.get("last_error"):
            last_error = row["last_error"]
        if row and row.get("status") == Status.FAILED:
            return ChunkStatus.FAILED, stage, last_error
    if (stages.get(Stage.AGGREGATE) or {}).get("status") == Status.DONE:
        return ChunkStatus.DONE, Stage.AGGREGATE, last_error
    for stage in reversed(CHUNK_STAGES):
        row = stages.get(stage)
        if row and row.get("status") == Status.IN_PROGRESS:
            return (ChunkStatus.IN_PROGRESS if analysis_running else ChunkStatus.INTERRUPTED), stage, last_error
    for stage in CHUNK_STAGES:
        row = stages.get(stage)
        if row and row.get("status") != Status.DONE:
            return ChunkStatus.WAITING, stage, last_error
    return ChunkStatus.WAITING, Stage.RETRIEVE, last_error


def is_running(analysis: AnalysisRow) -> bool:
    return analysis.status == AnalysisStatus.RUNNING


async def watch_progress(store: Store, analysis_id: str, stop: asyncio.Event, every_s: float = 0.25) -> AsyncIterator[spb.Progress]:
    """Progress of an analysis each time it changes, until it is finished or the service stops."""
    if await store.get_analysis(analysis_id) is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    last = None
    while True:
        analysis = await store.get_analysis(analysis_id)
        if analysis is None:
            raise NotFoundError(f"no analysis {analysis_id}")
        p = await store.progress(analysis_id)
        progress = spb.Progress(
            analysis_id=analysis_id,
            status=analysis.status,
            files_total=p.files_total,
            files_chunked=p.files_chunked,
            chunks_total=p.chunks_total,
            chunks_done=p.chunks_done,
            chunks_failed=p.chunks_failed,
        )
        finished = not is_running(analysis)
        if finished:
            v = verdict_pb(await store.get_verdict(analysis_id))
            if v is not None:
                progress.verdict.CopyFrom(v)
        if progress != last:
            yield progress
            last = progress
        if finished or stop.is_set():
            return
        await asyncio.sleep(every_s)


async def verdict_of(store: Store, analysis_id: str) -> pb.Verdict:
    if await store.get_analysis(analysis_id) is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    verdict = verdict_pb(await store.get_verdict(analysis_id))
    if verdict is None:
        raise NotReadyError(f"analysis {analysis_id} is still running")
    return verdict


async def list_chunks(store: Store, analysis_id: str, source_file: str = "") -> spb.ListChunksResponse:
    analysis = await store.get_analysis(analysis_id)
    if analysis is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    results = await chunk_results(store, analysis_id, source_file, is_running(analysis))
    return spb.ListChunksResponse(
        chunks=[
            spb.ChunkStatus(trace=r.trace, span=r.span, status=r.status, judgment=r.judgment, last_error=r.last_error)
            for r in results
        ]
    )


def outcome_rows_to_verdict(rows: list[ChunkOutcomeRow]) -> dict:
    # A chunk whose judgment failed (no signal, raw output kept) reaches the
    # aggregator like any other and is counted as failed, never as a signal.
    outcomes = [
        ChunkOutcome(
            r.source_file,
            r.source_kind,
            r.chunk_kind,
            "done" if r.agg_status == "done" and r.signal else "failed",
            r.signal or "",
            float(r.confidence or 0),
            tuple(r.evidence_kinds or ()),
        )
        for r in rows
    ]
    v = compute_verdict(outcomes)
    return {"label": v.label, "confidence": v.confidence, "counts": v.counts, "basis": list(v.basis)}


async def finalize_analysis(store: Store, analysis_id: str) -> dict | None:
    """Store the verdict when every file is chunked and every chunk settled; the verdict, or None while work remains."""
    verdict = await store.finalize_if_complete(analysis_id, outcome_rows_to_verdict)
    if verdict is not None:
        # The verdict is also the one of the analysis's current judgment version (the version list shows it).
        analysis = await store.get_analysis(analysis_id)
        if analysis is not None and analysis.current_judgment_version:
            await store.save_verdict_version(analysis_id, analysis.current_judgment_version, verdict)
        log.info("analysis %s complete: %s (%.2f)", analysis_id, verdict["label"], verdict["confidence"])
    return verdict


def verdict_message(label: str, confidence: float, counts: Mapping[str, int], basis: Iterable[str]) -> pb.Verdict:
    return pb.Verdict(label=label, confidence=confidence, counts={k: int(v) for k, v in counts.items()}, basis=list(basis))


def verdict_pb(row: VerdictRow | None) -> pb.Verdict | None:
    """A stored verdict as its message (None when there is none)."""
    if row is None:
        return None
    return verdict_message(row.label, row.confidence, row.counts, row.basis)


def computed_verdict_pb(verdict: Mapping[str, Any]) -> pb.Verdict:
    """A verdict computed by ``outcome_rows_to_verdict`` as its message."""
    return verdict_message(verdict["label"], verdict["confidence"], verdict["counts"], verdict["basis"])


async def chunk_results(store: Store, analysis_id: str, source_file: str = "", running: bool = True) -> list[spb.ChunkResult]:
    results: list[spb.ChunkResult] = []
    for r in await store.list_chunk_results(analysis_id, source_file):
        chunk = convert.from_dict(r.chunk, pb.Chunk)
        status, stage, last_error = chunk_status(r.stages, running)
        cr = spb.ChunkResult(
            trace=pb.ChunkTrace(
                project_id=r.project_id,
                source_file=r.source_file,
                source_sha256=r.sha256,
                chunk_id=r.chunk_id,
                chunk_order=r.chunk_order,
                chunk_kind=r.chunk_kind,
            ),
            span=chunk.span,
            status=status,
            last_error=last_error,
        )
        if r.query:
            cr.retriever_query.CopyFrom(convert.from_dict(r.query, pb.RetrieverQuery))
        for h in r.hits or []:
            cr.hits.append(convert.from_dict(h, pb.RetrievalHit))
        if r.judgment:
            cr.judgment.CopyFrom(convert.from_dict(r.judgment, pb.Judgment))
        results.append(cr)
    return results


async def analysis_result(store: Store, analysis_id: str) -> spb.AnalysisResult:
    analysis = await store.get_analysis(analysis_id)
    if analysis is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    running = is_running(analysis)
    result = spb.AnalysisResult(
        analysis_id=analysis_id, project_id=analysis.project_id, prompt=analysis.prompt, status=analysis.status
    )
    v = verdict_pb(await store.get_verdict(analysis_id))
    if v is not None:
        result.verdict.CopyFrom(v)
    for f in await store.list_files(analysis_id):
        result.files.append(
            spb.FileResult(
                source_file=f.source_file,
                source_kind=f.source_kind,
                status=f.status,
                excluded_reason=f.excluded_reason,
                source_sha256=f.sha256,
                chunk_count=f.chunk_count,
                error=f.error,
                errors=[convert.from_dict(e, pb.SourceError) for e in f.errors],
            )
        )
    result.chunks.extend(await chunk_results(store, analysis_id, running=running))
    result.judge_stats.CopyFrom(judge_stats(result.chunks))
    for d in await store.dead_letters(analysis_id):
        result.dead_letters.append(
            spb.DeadLetter(stage=d.stage, subject=d.subject, key=d.key, error=d.error, deliveries=d.deliveries)
        )
    return result


def judge_stats(chunks) -> spb.JudgeStats:
    """What judging cost and saved, from the chunks' stored judgments.

    Cached judgments made no call in this analysis, so their tokens and calls
    are not counted again; llm_calls_saved counts the chunks the ambiguous
    cascade settled with a confident rules judgment.
    """
    stats = spb.JudgeStats()
    routes: dict[str, int] = {}
    for c in chunks:
        if not c.HasField("judgment"):
            continue
        j = c.judgment
        stats.judged += 1
        if j.status == "failed":
            stats.failed += 1
        if j.route:
            routes[j.route] = routes.get(j.route, 0) + 1
        if j.cached:
            stats.cached += 1
            continue
        stats.llm_calls += j.llm_calls
        stats.prompt_tokens += j.prompt_tokens
        stats.completion_tokens += j.completion_tokens
        if j.route == "rules_confident":
            stats.llm_calls_saved += 1
    stats.by_route.update(routes)
    if routes.keys() & {"rules_confident", "llm_ambiguous"}:
        stats.cascade = "ambiguous"
    elif "llm" in routes:
        stats.cascade = "all"
    return stats
