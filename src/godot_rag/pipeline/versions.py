"""Result versions of an analysis: each version's view of the chunks, its verdict, the diff of two results.

The store keeps every retrieval and judgment version; this module reads them
into the pure domain types (``domain/aggregation/versions.py`` resolves a
version over its bases, ``domain/aggregation/diff.py`` compares two sides).
"""

from __future__ import annotations

import json
import logging

from godot_rag import convert
from godot_rag.domain.aggregation.diff import DiffSide, chunk_from_row, diff_sides
from godot_rag.domain.aggregation.versions import resolve_version
from godot_rag.errors import InvalidInputError, NotFoundError, NotReadyError
from godot_rag.infra.rows import ChunkOutcomeRow, JudgmentVersionRow, ReplayChunkRow, ReplayRow, StageRow
from godot_rag.infra.store import Store
from godot_rag.pipeline.results import (
    chunk_results,
    chunk_status,
    computed_verdict_pb,
    is_running,
    outcome_rows_to_verdict,
    verdict_message,
    verdict_pb,
)
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb

log = logging.getLogger(__name__)


async def judgment_bases(store: Store, analysis_id: str) -> dict[str, str]:
    """Judgment version -> the version it was replayed over ('' for an analysis's own run)."""
    return {r.version_id: r.base_version for r in await store.result_versions(analysis_id) if r.stage == "judge"}


async def judgment_view(store: Store, analysis_id: str, version_id: str) -> dict[str, JudgmentVersionRow]:
    """Each chunk's judgment row (judgment, hits, query, retrieval_version, version_id) in ``version_id``."""
    by_chunk: dict[str, dict[str, JudgmentVersionRow]] = {}
    for r in await store.judgment_version_rows(analysis_id):
        by_chunk.setdefault(r.chunk_id, {})[r.version_id] = r
    return resolve_version(version_id, await judgment_bases(store, analysis_id), by_chunk)


async def verdict_for_version(store: Store, analysis_id: str, version_id: str) -> dict:
    """The verdict the chunks' judgments in ``version_id`` give (a chunk without an ok judgment counts as failed)."""
    view = await judgment_view(store, analysis_id, version_id)
    rows = []
    for place in await store.chunk_places(analysis_id):
        row = view.get(place.chunk_id)
        judgment = (row.judgment if row is not None else None) or {}
        ok = row is not None and (judgment.get("status") or "ok") == "ok" and bool(judgment.get("signal"))
        rows.append(
            ChunkOutcomeRow(
                chunk_id=place.chunk_id,
                source_file=place.source_file,
                chunk_kind=place.chunk_kind,
                source_kind=place.source_kind,
                agg_status="done" if ok else "failed",
                signal=judgment.get("signal") if ok else None,
                confidence=judgment.get("confidence", 0.0),
                evidence_kinds=judgment.get("evidence_kinds") or [],
            )
        )
    return outcome_rows_to_verdict(rows)


async def finalize_replay(store: Store, replay_id: str) -> ReplayRow | None:
    """Once every chunk of the replay is settled: its version's verdict, that version made current, the replay done.

    The replay is marked done last, so whoever sees it done sees its version current.
    Two aggregators finishing the same replay write the same rows (same version, same verdict).
    """
    replay = await store.replay_row(replay_id)
    if replay is None or replay.status != "running" or await store.replay_unfinished(replay_id):
        return None
    aid = replay.analysis_id
    version = replay.judgment_version
    if version:
        verdict = await verdict_for_version(store, aid, version)
        await store.save_verdict_version(aid, version, verdict)
        retrieval_versions = {
            r.result_version for r in await store.replay_chunk_rows(replay_id) if r.stage == "retrieve" and r.result_version
        }
        await store.set_current_versions(
            aid,
            judgment_version=version,
            verdict=verdict,
            retrieval_version=next(iter(retrieval_versions)) if len(retrieval_versions) == 1 else "",
        )
        log.info("replay %s of %s finished: version %s, verdict %s", replay_id, aid, version, verdict["label"])
    else:
        log.warning("replay %s of %s finished without a judgment version (every chunk failed before judging)", replay_id, aid)
    return await store.finish_replay_if_complete(replay_id)


# ---------------------------------------------------------------- diff


async def _analysis_side(store: Store, analysis_id: str, ref: str, version_id: str = "") -> DiffSide:
    analysis = await store.get_analysis(analysis_id)
    if analysis is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    places = await store.chunk_places(analysis_id)
    # Each chunk's (judgment, hits) on this side.
    judged: dict[str, tuple[dict | None, list[dict] | None]]
    if version_id:
        judged = {cid: (j.judgment, j.hits) for cid, j in (await judgment_view(store, analysis_id, version_id)).items()}
        verdict_row = await store.verdict_version(analysis_id, version_id)
        if verdict_row is not None:
            label, confidence = verdict_row.label, verdict_row.confidence
        else:
            computed = await verdict_for_version(store, analysis_id, version_id)
            label, confidence = computed["label"], computed["confidence"]
    else:
        judged = {r.chunk_id: (r.judgment, r.hits) for r in await store.list_chunk_results(analysis_id)}
        current_verdict = await store.get_verdict(analysis_id)
        label, confidence = ("", 0.0) if current_verdict is None else (current_verdict.label, current_verdict.confidence)
    chunks = [
        chunk_from_row(p.chunk_id, p.source_file, p.start_line, p.end_line, *judged.get(p.chunk_id, (None, None)), p.agg_status)
        for p in places
    ]
    return DiffSide(
        ref=ref,
        label=label,
        confidence=float(confidence),
        analysis_id=analysis_id,
        version_id=version_id or analysis.current_judgment_version,
        chunks=chunks,
    )


async def diff_results(store: Store, a: str, b: str, analysis_id: str = "") -> dict:
    """Two analyses (``a``, ``b`` analysis ids), or two judgment versions of ``analysis_id``.

    Without ``analysis_id``, a reference that is not an analysis but a judgment
    version of the other analysis is read as that version.
    """
    if not a or not b:
        raise InvalidInputError("diff needs two references")
    if analysis_id:
        versions = await judgment_bases(store, analysis_id)
        for ref in (a, b):
            if ref not in versions:
                raise NotFoundError(f"analysis {analysis_id} has no judgment version {ref}")
        side_a = await _analysis_side(store, analysis_id, a, a)
        side_b = await _analysis_side(store, analysis_id, b, b)
    else:
        is_a = await store.get_analysis(a) is not None
        is_b = await store.get_analysis(b) is not None
        if is_a and is_b:
            side_a = await _analysis_side(store, a, a)
            side_b = await _analysis_side(store, b, b)
        elif is_a or is_b:
            # One analysis and a version id: two versions of that analysis (its current one against the version).
            owner = a if is_a else b
            other = b if is_a else a
            if other not in await judgment_bases(store, owner):
                raise NotFoundError(f"{other} is neither an analysis nor a judgment version of {owner}")
            owner_row = await store.get_analysis(owner)
            current = owner_row.current_judgment_version if owner_row is not None else ""
            side_a = await _analysis_side(store, owner, a, current if is_a else other)
            side_b = await _analysis_side(store, owner, b, other if is_a else current)
        else:
            raise NotFoundError(f"no analysis {a} or {b}; pass --analysis to compare two versions of one analysis")
    return diff_sides(side_a, side_b)


# ---------------------------------------------------------------- API (gateway)


def _iso(value) -> str:
    return value.isoformat() if value is not None else ""


async def list_versions(store: Store, analysis_id: str) -> spb.VersionsResponse:
    analysis = await store.get_analysis(analysis_id)
    if analysis is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    current_j, current_r = analysis.current_judgment_version, analysis.current_retrieval_version
    out = spb.VersionsResponse(analysis_id=analysis_id, current_judgment_version=current_j, current_retrieval_version=current_r)
    for r in await store.result_versions(analysis_id):
        v = spb.ResultVersion(
            version_id=r.version_id,
            stage=r.stage,
            config_json=json.dumps(r.config, sort_keys=True),
            base_version=r.base_version,
            replay_id=r.replay_id,
            current=r.version_id in (current_j, current_r),
            created_at=_iso(r.created_at),
        )
        if r.label:
            v.verdict.CopyFrom(verdict_message(r.label, r.confidence or 0.0, r.counts or {}, r.basis or []))
        out.versions.append(v)
    return out


async def verdict_of_version(store: Store, analysis_id: str, version_id: str = "") -> spb.VersionedVerdict:
    """The verdict of one judgment version (the current one when ``version_id`` is empty), computed if not stored."""
    analysis = await store.get_analysis(analysis_id)
    if analysis is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    current = analysis.current_judgment_version
    version = version_id or current
    if not version:
        verdict = verdict_pb(await store.get_verdict(analysis_id))
        if verdict is None:
            raise NotReadyError(f"analysis {analysis_id} has no verdict yet")
        return spb.VersionedVerdict(analysis_id=analysis_id, version_id="", current=True, verdict=verdict)
    if version not in await judgment_bases(store, analysis_id):
        raise NotFoundError(f"analysis {analysis_id} has no judgment version {version}")
    row = await store.verdict_version(analysis_id, version)
    if row is not None:
        stored = verdict_pb(row)
    elif is_running(analysis):
        raise NotReadyError(f"analysis {analysis_id} is still running")
    else:
        stored = computed_verdict_pb(await verdict_for_version(store, analysis_id, version))
    return spb.VersionedVerdict(analysis_id=analysis_id, version_id=version, current=version == current, verdict=stored)


async def chunk_trace(store: Store, analysis_id: str, chunk_id: str) -> spb.ChunkTraceDetail:
    """Everything about one chunk: text, current query and hits, every version, every stage attempt, the trace id."""
    analysis = await store.get_analysis(analysis_id)
    if analysis is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    results = await store.list_chunk_results(analysis_id, chunk_id=chunk_id)
    if not results:
        raise NotFoundError(f"analysis {analysis_id} has no chunk {chunk_id}")
    r = results[0]
    chunk = convert.from_dict(r.chunk, pb.Chunk)
    status, _stage, _err = chunk_status(r.stages, is_running(analysis))
    out = spb.ChunkTraceDetail(
        trace=pb.ChunkTrace(
            project_id=r.project_id,
            source_file=r.source_file,
            source_sha256=r.sha256,
            chunk_id=chunk_id,
            chunk_order=r.chunk_order,
            chunk_kind=r.chunk_kind,
        ),
        span=chunk.span,
        status=status,
        text=chunk.code_text,
    )
    if r.query:
        out.query.CopyFrom(convert.from_dict(r.query, pb.RetrieverQuery))
    for h in r.hits or []:
        out.hits.append(convert.from_dict(h, pb.RetrievalHit))
    current_judgment = await store.get_judgment(analysis_id, chunk_id)
    current_j = current_judgment.version_id if current_judgment is not None else ""
    for j in await store.judgment_version_rows(analysis_id, chunk_id):
        out.judgments.append(
            spb.JudgmentVersion(
                version_id=j.version_id,
                retrieval_version=j.retrieval_version,
                current=j.version_id == current_j,
                judgment=convert.from_dict(j.judgment, pb.Judgment),
                created_at=_iso(j.created_at),
            )
        )
    current_retrieval = await store.get_retrieval(analysis_id, chunk_id)
    current_r = current_retrieval.version_id if current_retrieval is not None else ""
    for rv in await store.retrieval_version_rows(analysis_id, chunk_id):
        version = spb.RetrievalVersion(
            version_id=rv.version_id,
            current=rv.version_id == current_r,
            kb_version=rv.kb_version,
            created_at=_iso(rv.created_at),
        )
        version.query.CopyFrom(convert.from_dict(rv.query, pb.RetrieverQuery))
        version.hits.extend(convert.from_dict(h, pb.RetrievalHit) for h in rv.hits or [])
        out.retrievals.append(version)
    latest: tuple = ()
    for s in await store.chunk_stages(analysis_id, chunk_id):
        out.attempts.append(_attempt(s))
        latest = max(latest, (s.updated_at, s.trace_id)) if s.trace_id else latest
    for rs in await store.replay_stage_rows_of_chunk(analysis_id, chunk_id):
        out.attempts.append(_attempt(rs, replay_id=rs.replay_id, source=rs.source))
        latest = max(latest, (rs.updated_at, rs.trace_id)) if rs.trace_id else latest
    out.trace_id = latest[1] if latest else ""
    return out


def _attempt(s: StageRow | ReplayChunkRow, replay_id: str = "", source: str = "") -> spb.StageAttempt:
    started, updated = s.started_at, s.updated_at
    duration = (updated - started).total_seconds() * 1000 if started is not None and updated is not None else 0.0
    return spb.StageAttempt(
        stage=s.stage,
        status=s.status,
        attempts=s.attempts,
        last_error=s.last_error or "",
        worker=s.worker or "",
        trace_id=s.trace_id or "",
        started_at=_iso(started),
        updated_at=_iso(updated),
        duration_ms=max(0.0, duration),
        replay_id=replay_id,
        source=source,
    )


MAX_PAGE = 1000
DEFAULT_PAGE = 100


async def chunk_page(store: Store, request: spb.ListChunksPageRequest) -> spb.ChunkPage:
    """Chunks filtered by status, signal, file and needs-migration, a page at a time (the token is the offset)."""
    analysis = await store.get_analysis(request.analysis_id)
    if analysis is None:
        raise NotFoundError(f"no analysis {request.analysis_id}")
    if request.needs_migration not in ("", "true", "false"):
        raise InvalidInputError("needs_migration must be 'true', 'false' or empty")
    size = request.page_size or DEFAULT_PAGE
    if size < 0 or size > MAX_PAGE:
        raise InvalidInputError(f"page_size must be between 1 and {MAX_PAGE}")
    try:
        offset = int(request.page_token or 0)
    except ValueError as exc:
        raise InvalidInputError(f"bad page_token {request.page_token!r}") from exc
    results = await chunk_results(store, request.analysis_id, request.source_file, is_running(analysis))
    wanted = [
        c
        for c in results
        if (not request.status or c.status == request.status)
        and (not request.signal or c.judgment.signal == request.signal)
        and (not request.needs_migration or c.judgment.needs_migration == (request.needs_migration == "true"))
    ]
    page = wanted[offset : offset + size]
    more = offset + size < len(wanted)
    return spb.ChunkPage(chunks=page, next_page_token=str(offset + size) if more else "", total=len(wanted))
