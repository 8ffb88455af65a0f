"""The web screen's JSON API and its downloads (JSON or CSV exports). Each handler decodes the request, calls
one pipeline function (the same the gRPC API and the CLI call) and encodes its answer."""

from __future__ import annotations

from aiohttp import web

from godot_rag.pipeline import web_data
from godot_rag.pipeline import web_views as wv
from godot_rag.pipeline.replay import replay_status, start_replay
from godot_rag.pipeline.versions import diff_results
from godot_rag.pipeline.web_requests import export_download, json_object_of, replay_json, replay_options_of
from services.gateway.web_base import WebParts, json_response


def _download(rows: list[dict], columns, fmt: str, name: str) -> web.Response:
    download = export_download(rows, columns, fmt, name)
    return web.Response(
        text=download.text,
        content_type=download.content_type,
        charset="utf-8",
        headers={"Content-Disposition": f'attachment; filename="{download.filename}"'},
    )


def add_api_routes(routes: web.RouteTableDef, parts: WebParts) -> None:
    ctx = parts.ctx

    # ------------------------------------------------------------ exports

    @routes.get(r"/export/analyses.{fmt:json|csv}")
    async def export_analyses(request: web.Request) -> web.Response:
        rows = await web_data.analyses_export_rows(ctx.store)
        return _download(rows, wv.EXPORT_COLUMNS["analyses"], request.match_info["fmt"], "analyses")

    @routes.get(r"/a/{aid}/export/{what:files|chunks|candidates}.{fmt:json|csv}")
    async def export_list(request: web.Request) -> web.Response:
        aid, what = request.match_info["aid"], request.match_info["what"]
        rows = await web_data.export_rows(
            ctx.store, aid, what, flt=wv.ChunkFilter.from_query(request.query), chunk_id=request.query.get("chunk", "")
        )
        return _download(rows, wv.export_columns(what), request.match_info["fmt"], f"{aid}-{what}")

    # ------------------------------------------------------------ JSON API

    @routes.get("/api/analyses")
    async def analyses(request: web.Request) -> web.Response:
        return json_response([a.to_json() for a in await ctx.store.list_analyses()])

    @routes.get("/api/analyses/{analysis_id}")
    async def analysis(request: web.Request) -> web.Response:
        return json_response(await web_data.analysis_json(ctx.store, request.match_info["analysis_id"]))

    @routes.get("/api/analyses/{analysis_id}/why-not")
    async def why_not(request: web.Request) -> web.Response:
        aid, chunk_id, record = request.match_info["analysis_id"], request.query.get("chunk", ""), request.query.get("record", "")
        return json_response(await web_data.why_not_json(ctx.store, aid, chunk_id, record, limit_per_table=parts.limit_per_table))

    @routes.get("/api/analyses/{analysis_id}/chunks/{chunk_id:.+}")
    async def chunk(request: web.Request) -> web.Response:
        aid, chunk_id = request.match_info["analysis_id"], request.match_info["chunk_id"]
        return json_response(await web_data.chunk_detail(ctx.store, aid, chunk_id))

    @routes.get("/api/diff")
    async def diff_api(request: web.Request) -> web.Response:
        q = request.query
        return json_response(await diff_results(ctx.store, q.get("a", ""), q.get("b", ""), q.get("analysis", "")))

    @routes.post("/api/analyses/{analysis_id}/replay")
    async def replay_api(request: web.Request) -> web.Response:
        """Replay chunks of an analysis: the same pipeline function as the gRPC Replay and `godot-rag replay`."""
        opts = replay_options_of(request.match_info["analysis_id"], json_object_of(await request.read()))
        return json_response(replay_json(await start_replay(ctx.store, ctx.bus, ctx.settings, opts)))

    @routes.get("/api/replays/{replay_id}")
    async def replay_state(request: web.Request) -> web.Response:
        return json_response(replay_json(await replay_status(ctx.store, request.match_info["replay_id"])))

    @routes.post("/api/analyses")
    async def submit(request: web.Request) -> web.Response:
        body = await request.read()
        return json_response(await web_data.submit_json(ctx.store, ctx.bus, ctx.settings, body, request.remote or ""))
