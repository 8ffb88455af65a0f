"""The web debug screen: per analysis, every file (with exclusion reasons) and
every chunk (status, line range, the exact text sent, the search clues, the
candidates found, the judgment). Served on loopback by the gateway."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from importlib import resources

from aiohttp import web

from godot_rag.domain.ingest.policy import IngestError
from godot_rag.errors import NotFoundError
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.export import result_to_json
from godot_rag.pipeline.results import analysis_result

log = logging.getLogger(__name__)


def _json(data, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data, default=_default, ensure_ascii=False), status=status, content_type="application/json")


def _default(value):
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def build_app(ctx: ServiceContext) -> web.Application:
    routes = web.RouteTableDef()
    index_html = resources.files("services.gateway").joinpath("static/index.html").read_text(encoding="utf-8")

    @routes.get("/")
    async def index(request: web.Request) -> web.Response:
        return web.Response(text=index_html, content_type="text/html")

    @routes.get("/api/analyses")
    async def analyses(request: web.Request) -> web.Response:
        return _json(await ctx.store.list_analyses())

    @routes.get("/api/analyses/{analysis_id}")
    async def analysis(request: web.Request) -> web.Response:
        try:
            result = await analysis_result(ctx.store, request.match_info["analysis_id"])
        except NotFoundError as exc:
            return _json({"error": str(exc)}, 404)
        doc = result_to_json(result)
        doc["progress"] = await ctx.store.progress(result.analysis_id)
        return _json(doc)

    @routes.get("/api/analyses/{analysis_id}/chunks/{chunk_id:.+}")
    async def chunk(request: web.Request) -> web.Response:
        aid, chunk_id = request.match_info["analysis_id"], request.match_info["chunk_id"]
        row = await ctx.store.get_chunk(aid, chunk_id)
        if row is None:
            return _json({"error": f"no chunk {chunk_id} in analysis {aid}"}, 404)
        retrieval = await ctx.store.get_retrieval(aid, chunk_id)
        judgment = await ctx.store.get_judgment(aid, chunk_id)
        stages = await ctx.store.chunk_stages(aid, chunk_id)
        return _json({"chunk": row["chunk"], "source_file": row["source_file"], "retrieval": retrieval, "judgment": judgment,
                      "stages": stages})

    @routes.post("/api/analyses")
    async def submit(request: web.Request) -> web.Response:
        from godot_rag.pipeline.submit import collect, pipeline_version_for, submit_all

        body = await request.json()
        prompt = (body.get("prompt") or "").strip()
        if not prompt:
            return _json({"error": "a prompt is required"}, 400)
        try:
            submission = await asyncio.to_thread(
                collect, path=body.get("path", ""), expanded_text=body.get("expanded_text", ""), snippet=body.get("snippet", ""),
                snippet_kind=body.get("snippet_kind", ""), git_url=body.get("git_url", ""), git_ref=body.get("git_ref", ""),
                settings=ctx.settings,
            )
        except IngestError as exc:
            return _json({"error": str(exc)}, 400)
        submitted = await submit_all(ctx.store, ctx.bus, submission, prompt, pipeline_version_for(ctx.settings))
        if not submitted:
            return _json({"error": "no project found in the input"}, 400)
        return _json({"analysis_id": submitted[0].analysis_id, "project_id": submitted[0].project_id,
                      "projects": [{"analysis_id": s.analysis_id, "project_id": s.project_id} for s in submitted]})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.add_routes(routes)
    return app


async def serve(ctx: ServiceContext, host: str, port: int) -> None:
    """Run the web server until the service stops."""
    runner = web.AppRunner(build_app(ctx), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info("web debug screen on http://%s:%d/", host, port)
    try:
        await ctx.stop.wait()
    finally:
        await runner.cleanup()
