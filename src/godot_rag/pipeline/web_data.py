"""Read what one web page shows from the store and shape it (``web_views``).

One function per page or live update; the gateway's web module renders the
returned dicts and nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from godot_rag.domain.patching import patch_reads
from godot_rag.errors import InvalidInputError, NotFoundError
from godot_rag.infra.bus import Bus
from godot_rag.infra.rows import AnalysisRow, FileRow, WebChunkRow
from godot_rag.infra.store import Store
from godot_rag.pipeline import web_views as wv
from godot_rag.pipeline.export import result_to_json
from godot_rag.pipeline.patch import analysis_patch_doc
from godot_rag.pipeline.results import analysis_result
from godot_rag.pipeline.submit import SubmittedProject, collect_and_submit
from godot_rag.pipeline.versions import diff_results, list_versions
from godot_rag.pipeline.web_requests import archive_of, json_object_of, live_events, sse_message, submit_input_of, submitted_json
from godot_rag.pipeline.why_not import why_not_retrieved
from godot_rag.settings import Settings

# A stage row is stamped with its transaction's start time, and a chunk list
# is written in one transaction: a row may commit up to this long after its
# stamp, so each poll looks back this far and sends only what changed.
LOOKBACK = timedelta(seconds=5)


async def _analysis(store: Store, analysis_id: str) -> AnalysisRow:
    a = await store.get_analysis(analysis_id)
    if a is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    return a


async def analysis_page(store: Store, analysis_id: str, flt: wv.ChunkFilter) -> dict:
    a = await _analysis(store, analysis_id)
    running = a.status == "running"
    files = await store.list_files(analysis_id)
    views = [wv.chunk_view(r, running) for r in await store.web_chunk_rows(analysis_id)]
    counts = wv.status_counts(views)
    timing = await store.web_timing(analysis_id)
    kinds = {f.source_file: f.source_kind for f in files}
    return {
        "a": a,
        "views": views,
        "counts": counts,
        "flt": flt,
        "shown": sum(1 for v in views if flt.keeps(v)),
        "progress": wv.progress_view(counts, timing, running=running),
        "verdict": wv.verdict_view(await store.get_verdict(analysis_id), running, counts),
        "chart": wv.signal_chart(views, kinds),
        "tree": wv.file_tree(files, views),
        "chunk_files": sorted(f.source_file for f in files if f.included),
        "dead_letters": await store.dead_letters(analysis_id),
        "cursor": timing.cursor.isoformat() if timing.cursor is not None else "",
    }


async def verdict_part(store: Store, analysis_id: str) -> dict:
    a = await _analysis(store, analysis_id)
    running = a.status == "running"
    views = [wv.chunk_view(r, running) for r in await store.web_chunk_rows(analysis_id)]
    kinds = {f.source_file: f.source_kind for f in await store.list_files(analysis_id)}
    return {
        "verdict": wv.verdict_view(await store.get_verdict(analysis_id), running, wv.status_counts(views)),
        "chart": wv.signal_chart(views, kinds),
    }


async def submit(
    store: Store, bus: Bus, settings: Settings, body: Mapping[str, Any], archive: bytes, archive_name: str, client: str
) -> list[SubmittedProject]:
    """A submission from the web form or the JSON API: the same pipeline function as the gRPC Submit."""
    _, submitted = await collect_and_submit(store, bus, settings, submit_input_of(body, archive, archive_name, client))
    return submitted


async def submit_json(store: Store, bus: Bus, settings: Settings, body: bytes, client: str) -> dict[str, Any]:
    """The JSON API's submission: its body decoded, submitted as ``submit``, the submitted projects as JSON."""
    doc = json_object_of(body)
    submitted = await submit(store, bus, settings, doc, archive_of(doc), str(doc.get("archive_name") or ""), client)
    return submitted_json(submitted)


async def analysis_json(store: Store, analysis_id: str) -> dict:
    """The API's analysis document: the result as the exports write it, with the analysis's progress."""
    result = await analysis_result(store, analysis_id)
    doc = result_to_json(result)
    doc["progress"] = (await store.progress(result.analysis_id)).to_json()
    return doc


async def why_not_json(store: Store, analysis_id: str, chunk_id: str, record: str, *, limit_per_table: int) -> dict:
    """Why ``record`` is not among the chunk's hits (the API's why-not): both must be given."""
    if not chunk_id or not record.strip():
        raise InvalidInputError("give chunk and record")
    return await why_not_retrieved(store, analysis_id, chunk_id, record[:500], limit_per_table=limit_per_table)


async def chunk_detail(store: Store, analysis_id: str, chunk_id: str) -> dict:
    """One chunk with its retrieval, judgment and stage rows (the JSON API's chunk); NotFoundError when there is no such chunk."""
    row = await store.get_chunk(analysis_id, chunk_id)
    if row is None:
        raise NotFoundError(f"no chunk {chunk_id} in analysis {analysis_id}")
    retrieval = await store.get_retrieval(analysis_id, chunk_id)
    judgment = await store.get_judgment(analysis_id, chunk_id)
    stages = await store.chunk_stages(analysis_id, chunk_id)
    return {
        "chunk": row.chunk,
        "source_file": row.source_file,
        "retrieval": retrieval.to_json() if retrieval is not None else None,
        "judgment": judgment.to_json() if judgment is not None else None,
        "stages": [s.to_json() for s in stages],
    }


POLL_S = 0.5  # how often a live list asks the store for changes
HEARTBEAT_S = 15.0  # a comment line when nothing was sent for this long (proxies close idle streams)


async def live_stream(
    feed: LiveFeed,
    first: dict,
    render_chunk: Callable[[Mapping[str, Any]], str],
    render_file: Callable[[Mapping[str, Any]], str],
    stop: asyncio.Event,
    poll_s: float = POLL_S,
    heartbeat_s: float = HEARTBEAT_S,
) -> AsyncIterator[bytes]:
    """The server-sent events of a live list, from its first batch until the analysis ends (an ``end``
    event) or the service stops: each batch's events, and a keep-alive comment when idle."""
    batch = first
    idle = 0.0
    while True:
        events = live_events(batch, render_chunk, render_file)
        for name, data in events:
            yield sse_message(name, data, batch["cursor"])
        idle = 0.0 if any(name != "progress" for name, _ in events) else idle + poll_s
        if not batch["running"]:
            yield sse_message("end", {"status": batch["status"]}, batch["cursor"])
            return
        if idle >= heartbeat_s:
            yield b": keep-alive\n\n"
            idle = 0.0
        if stop.is_set():
            return
        await asyncio.sleep(poll_s)
        batch = await feed.poll()


class LiveFeed:
    """The live list of one analysis for one client: after one full read, each
    poll reads only the chunks and files changed since the cursor (looking back
    LOOKBACK) and returns those whose state differs from what the client was sent.
    Counts and per-file figures come from this feed's own copy of the list."""

    def __init__(self, store: Store, analysis_id: str):
        self.store = store
        self.analysis_id = analysis_id
        self.views: dict[str, dict] = {}
        self.files: dict[str, FileRow] = {}
        self.cursor: datetime | None = None
        self.running = True
        self.status = ""

    async def start(self, since: datetime | None) -> dict:
        """Load the whole list once; the first batch holds what changed after ``since``
        (everything when the client has no cursor)."""
        a = await _analysis(self.store, self.analysis_id)
        self.running, self.status = a.status == "running", a.status
        self.files = {f.source_file: f for f in await self.store.list_files(self.analysis_id)}
        changed: list[dict] = []
        for r in await self.store.web_chunk_rows(self.analysis_id):
            v = wv.chunk_view(r, self.running)
            self.views[v["chunk_id"]] = v
            if since is None or r.changed_at is None or r.changed_at > since - LOOKBACK:
                changed.append(v)
            if r.changed_at is not None and (self.cursor is None or r.changed_at > self.cursor):
                self.cursor = r.changed_at
        if since is not None and (self.cursor is None or since > self.cursor):
            self.cursor = since
        return await self._batch(changed, set(self.files) if since is None else {v["source_file"] for v in changed})

    async def poll(self) -> dict:
        a = await _analysis(self.store, self.analysis_id)
        was_running = self.running
        self.running, self.status = a.status == "running", a.status
        look = None if self.cursor is None else self.cursor - LOOKBACK
        rows = await self.store.web_chunk_rows(self.analysis_id, look)
        if was_running and not self.running:
            # 'in progress' reads 'interrupted' once nothing works on the analysis: recompute every chunk.
            rows = await self.store.web_chunk_rows(self.analysis_id)
        changed = []
        for r in rows:
            v = wv.chunk_view(r, self.running)
            old = self.views.get(v["chunk_id"])
            if old is None or old["signature"] != v["signature"]:
                changed.append(v)
            self.views[v["chunk_id"]] = v
            if r.changed_at is not None and (self.cursor is None or r.changed_at > self.cursor):
                self.cursor = r.changed_at
        touched = {v["source_file"] for v in changed}
        for f in await self.store.web_files_changed(self.analysis_id, look):
            known = self.files.get(f.source_file)
            if known is None or (known.status, known.chunk_count, known.error) != (f.status, f.chunk_count, f.error):
                touched.add(f.source_file)
            self.files[f.source_file] = f
        return await self._batch(changed, touched)

    async def _batch(self, changed: list[dict], touched: set[str]) -> dict:
        views = list(self.views.values())
        file_entries: list[dict] = []
        if touched:
            tree = wv.file_tree(
                [f for name, f in self.files.items() if name in touched], [v for v in views if v["source_file"] in touched]
            )
            file_entries = _tree_files(tree["root"]) + tree["excluded"]
        counts = wv.status_counts(views)
        timing = await self.store.web_timing(self.analysis_id)
        changed.sort(key=lambda v: v["order_key"])
        return {
            "running": self.running,
            "status": self.status,
            "chunks": changed,
            "files": file_entries,
            "counts": counts,
            "progress": wv.progress_view(counts, timing, running=self.running),
            "cursor": self.cursor,
        }


def _tree_files(node: dict) -> list[dict]:
    out = list(node["files"])
    for f in node["folders"]:
        out.extend(_tree_files(f))
    return out


async def file_page(
    store: Store, analysis_id: str, source_file: str, *, why_chunk: str = "", why: str = "", limit_per_table: int = 5
) -> dict:
    a = await _analysis(store, analysis_id)
    running = a.status == "running"
    f = await store.get_file(analysis_id, source_file)
    if f is None:
        raise NotFoundError(f"no file {source_file} in analysis {analysis_id}")
    source = None
    if f.included and f.sha256:
        data = await store.get_blob(f.sha256)
        source = None if data is None else data.decode("utf-8", errors="replace")
    rows = await store.web_file_chunks(analysis_id, source_file)
    chunks = []
    for r in rows:
        j = r.judgment or {}
        # The file page's chunk as a row of the live list (the list's confidence column is not shown here).
        v = wv.chunk_view(
            WebChunkRow(
                chunk_id=r.chunk_id,
                source_file=source_file,
                chunk_order=r.chunk_order,
                chunk_kind=r.chunk.get("chunk_kind", ""),
                start_line=r.start_line,
                end_line=r.end_line,
                name=r.chunk.get("name", ""),
                source_kind=f.source_kind,
                file_order=f.file_order,
                stages={s["stage"]: s for s in r.stages or []},
                changed_at=None,
                signal=j.get("signal"),
                needs_migration=j.get("needs_migration"),
                confidence=None,
                judgment_status=r.judgment_status,
                migration_notes=j.get("migration_notes") or [],
            ),
            running,
        )
        judgment = wv.judgment_view(r)
        candidates = wv.candidate_rows(r.hits or [], r.judgment)
        v.update(
            {
                "chunk": r.chunk,
                "stages": r.stages or [],
                "query": r.query,
                "kb_version": r.kb_version,
                "judgment": judgment,
                "candidates": candidates,
                "candidate_ids": {c["record_id"]: i for i, c in enumerate(candidates, 1)},
                "tracking": wv.tracking_view(a.project_id, source_file, f.sha256, r.chunk, analysis_id),
                "why": None,
                "why_query": "",
            }
        )
        if why and why_chunk == r.chunk_id:
            v["why_query"] = why
            try:
                v["why"] = await why_not_retrieved(store, analysis_id, r.chunk_id, why, limit_per_table=limit_per_table)
            except NotFoundError as exc:
                v["why"] = {"error": str(exc), "record": why}
        chunks.append(v)
    for i, c in enumerate(chunks):
        c["prev"] = chunks[i - 1] if i > 0 else None
        c["next"] = chunks[i + 1] if i + 1 < len(chunks) else None
    versions = await store.web_file_versions(a.project_id, source_file)
    latest = await store.web_latest_analysis(a.project_id)
    outdated = wv.outdated_view(analysis_id, a.created_at, f.sha256, versions)
    if (
        outdated is None
        and latest is not None
        and latest.analysis_id != analysis_id
        and latest.created_at > a.created_at
        and not any(v.analysis_id == latest.analysis_id for v in versions)
    ):
        outdated = {"analysis_id": latest.analysis_id, "created_at": latest.created_at, "sha256": ""}
    patch = None
    if f.included and source is not None and patch_reads(source_file):
        doc = await analysis_patch_doc(store, analysis_id)
        entry = next((e for e in doc["files"] if e["file"] == source_file), None)
        patch = wv.patch_view(entry, chunks, analysis_id, source_file)
    return {
        "a": a,
        "f": f,
        "source": source,
        "chunks": chunks,
        "segments": wv.source_segments(source, chunks) if source is not None else [],
        "outdated": outdated,
        "patch": patch,
    }


async def analyses_export_rows(store: Store) -> list[dict]:
    """Every analysis, one export row each (the analyses list's download)."""
    return [a.to_dict() for a in await store.list_analyses()]


async def export_rows(
    store: Store, analysis_id: str, what: str, *, flt: wv.ChunkFilter | None = None, chunk_id: str = ""
) -> list[dict]:
    a = await _analysis(store, analysis_id)
    running = a.status == "running"
    if what == "files":
        return [
            {k: getattr(f, k) for k in wv.EXPORT_COLUMNS["files"]} | {"included": f.included}
            for f in await store.list_files(analysis_id)
        ]
    if what == "chunks":
        views = [wv.chunk_view(r, running) for r in await store.web_chunk_rows(analysis_id)]
        return wv.chunk_export(wv.filter_chunks(views, flt or wv.ChunkFilter()))
    if what == "candidates":
        retrieval = await store.get_retrieval(analysis_id, chunk_id)
        if retrieval is None:
            raise NotFoundError(f"chunk {chunk_id} of analysis {analysis_id} has no stored search")
        judgment = await store.get_judgment(analysis_id, chunk_id)
        return wv.candidate_export(wv.candidate_rows(retrieval.hits or [], judgment.judgment if judgment is not None else None))
    raise NotFoundError(f"no list {what!r}")


async def diff_page(store: Store, form: Mapping[str, Any]) -> dict:
    """The diff page's data for its form (``web_requests.diff_form``): the analysis's result versions when one is
    named, the diff when two versions are; an unknown analysis or version is the page's error, not a failure."""
    doc, error, listed = None, "", None
    try:
        if form["analysis"]:
            listed = await list_versions(store, form["analysis"])
        if form["a"] and form["b"]:
            doc = await diff_results(store, form["a"], form["b"], form["analysis"])
    except (NotFoundError, InvalidInputError) as exc:
        error = str(exc)
    return {"form": form, "doc": doc, "error": error, "versions": listed}
