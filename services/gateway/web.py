"""The web screen: analyses, a live per-chunk list, the file view with each
chunk's text, search clues, candidates and judgment, and the JSON API.
Served by the gateway; pages are rendered from ``godot_rag.pipeline.web_data``
with autoescaping templates, and work without JavaScript where they can."""

from __future__ import annotations

import logging
from importlib import resources
from typing import Any
from urllib.parse import quote

from aiohttp import web

from godot_rag.errors import AccessDeniedError, GodotRagError, InvalidInputError, OverloadedError
from godot_rag.infra.auth import COOKIE_NAME, token_matches
from godot_rag.infra.grpc_edge import http_status_for
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline import web_data
from godot_rag.pipeline import web_views as wv
from godot_rag.pipeline.replay import replay_status, start_replay
from godot_rag.pipeline.versions import diff_results
from godot_rag.pipeline.web_requests import (
    EVENT_STREAM_HEADERS,
    SECURITY_HEADERS,
    access_refusal,
    allowed_host_names,
    answers_json,
    diff_form,
    error_title,
    export_download,
    json_object_of,
    min_score_of,
    replay_json,
    replay_options_of,
    since_of,
    submit_form_of,
    submit_form_values,
    to_json_text,
)

log = logging.getLogger(__name__)


def _json(data, status: int = 200) -> web.Response:
    return web.Response(text=to_json_text(data), status=status, content_type="application/json")


# ---------------------------------------------------------------- app


def build_app(ctx: ServiceContext) -> web.Application:
    routes = web.RouteTableDef()
    pkg = resources.files("services.gateway")
    env = wv.template_environment(str(pkg.joinpath("templates")))
    macros: Any = env.get_template("macros.html").module  # the template's macros, looked up by name
    allowed = allowed_host_names(ctx.settings.host)
    limit = ctx.settings.retrieval_limit_per_table
    token = ctx.settings.auth_token

    def page(name: str, status: int = 200, **data) -> web.Response:
        return web.Response(text=env.get_template(name).render(**data), status=status, content_type="text/html")

    @web.middleware
    async def errors(request: web.Request, handler):
        """A handler's typed error, mapped once (infra/grpc_edge.http_status_for): the same status in JSON
        for the API, the exports and the event stream, and on a page for the pages."""
        try:
            return await handler(request)
        except GodotRagError as exc:
            status = http_status_for(exc)
            if status >= 500:
                log.warning("%s %s failed: %s: %s", request.method, request.path, type(exc).__name__, exc)
            if answers_json(request.path):
                return _json({"error": str(exc)}, status)
            return page("error.html", status, title=error_title(status), message=str(exc))

    @web.middleware
    async def guard(request: web.Request, handler):
        refusal = access_refusal(
            request.method, request.path, request.headers, request.cookies.get(COOKIE_NAME, ""), allowed, token
        )
        if refusal is not None:
            if refusal.status == 403:
                log.warning("%s %s %s", refusal.message, request.method, request.path)
            if refusal.redirect:
                raise web.HTTPSeeOther(refusal.redirect)
            if refusal.as_json:
                return _json({"error": refusal.message}, refusal.status)
            return web.Response(text=refusal.message, status=refusal.status)
        response = await handler(request)
        if not response.prepared:
            response.headers.update(SECURITY_HEADERS)
        return response

    # ------------------------------------------------------------ sign-in (only when a token is configured)

    @routes.get("/login")
    async def login_page(request: web.Request) -> web.Response:
        return page("login.html", error="")

    @routes.post("/login")
    async def login(request: web.Request) -> web.Response:
        post = await request.post()
        given = str(post.get("token", ""))
        if not token_matches(given, token):
            return page("login.html", 401, error="wrong token")
        response = web.HTTPSeeOther("/")
        # HttpOnly: no script reads it; SameSite=Strict: no other site's page sends it.
        response.set_cookie(COOKIE_NAME, given, httponly=True, samesite="Strict", path="/")
        raise response

    # ------------------------------------------------------------ pages

    async def index_page(error: str = "", form: dict | None = None, status: int = 200) -> web.Response:
        return page("index.html", status, analyses=await ctx.store.list_analyses(), error=error, form=submit_form_values(form))

    @routes.get("/")
    async def index(request: web.Request) -> web.Response:
        return await index_page()

    @routes.post("/submit")
    async def submit_form(request: web.Request) -> web.Response:
        form = submit_form_of(await request.post())
        try:
            submitted = await web_data.submit(
                ctx.store, ctx.bus, ctx.settings, form.body, form.archive, form.archive_name, request.remote or ""
            )
        except (InvalidInputError, AccessDeniedError, OverloadedError) as exc:
            return await index_page(str(exc), form.fields, http_status_for(exc))
        raise web.HTTPSeeOther(f"/a/{quote(submitted[0].analysis_id, safe='')}")

    @routes.get("/a/{aid}")
    async def analysis_page(request: web.Request) -> web.Response:
        flt = wv.ChunkFilter.from_query(request.query)
        data = await web_data.analysis_page(ctx.store, request.match_info["aid"], flt)
        return page("analysis.html", filter_query=flt.query_string(), **data)

    @routes.get("/a/{aid}/part/verdict")
    async def verdict_part(request: web.Request) -> web.Response:
        data = await web_data.verdict_part(ctx.store, request.match_info["aid"])
        return web.Response(text=str(macros.verdict_part(data["verdict"], data["chart"])), content_type="text/html")

    @routes.get("/a/{aid}/events")
    async def events(request: web.Request) -> web.StreamResponse:
        """Server-sent events: changed chunk rows (rendered), changed file entries, counts and progress."""
        aid = request.match_info["aid"]
        since = since_of(request.headers.get("Last-Event-ID") or request.query.get("since", ""))
        feed = web_data.LiveFeed(ctx.store, aid)
        batch = await feed.start(since)
        resp = web.StreamResponse(headers=EVENT_STREAM_HEADERS)
        await resp.prepare(request)
        chunk_html, file_html = (lambda v: str(macros.chunk_row(v, aid))), (lambda e: str(macros.file_meta(e)))
        try:
            async for event in web_data.live_stream(feed, batch, chunk_html, file_html, ctx.stop):
                await resp.write(event)
        except ConnectionResetError:
            pass  # the page went away
        return resp

    @routes.get("/a/{aid}/f/{path:.+}")
    async def file_page(request: web.Request) -> web.Response:
        data = await web_data.file_page(
            ctx.store,
            request.match_info["aid"],
            request.match_info["path"],
            why_chunk=request.query.get("chunk", ""),
            why=request.query.get("why", "")[:500],
            limit_per_table=limit,
        )
        return page("file.html", min_score=min_score_of(request.query), **data)

    # ------------------------------------------------------------ diff

    @routes.get("/diff")
    async def diff_page(request: web.Request) -> web.Response:
        return page("diff.html", **await web_data.diff_page(ctx.store, diff_form(request.query)))

    # ------------------------------------------------------------ exports

    def _export(rows: list[dict], columns, fmt: str, name: str) -> web.Response:
        download = export_download(rows, columns, fmt, name)
        return web.Response(
            text=download.text,
            content_type=download.content_type,
            charset="utf-8",
            headers={"Content-Disposition": f'attachment; filename="{download.filename}"'},
        )

    @routes.get(r"/export/analyses.{fmt:json|csv}")
    async def export_analyses(request: web.Request) -> web.Response:
        rows = await web_data.analyses_export_rows(ctx.store)
        return _export(rows, wv.EXPORT_COLUMNS["analyses"], request.match_info["fmt"], "analyses")

    @routes.get(r"/a/{aid}/export/{what:files|chunks|candidates}.{fmt:json|csv}")
    async def export_list(request: web.Request) -> web.Response:
        aid, what = request.match_info["aid"], request.match_info["what"]
        rows = await web_data.export_rows(
            ctx.store, aid, what, flt=wv.ChunkFilter.from_query(request.query), chunk_id=request.query.get("chunk", "")
        )
        return _export(rows, wv.export_columns(what), request.match_info["fmt"], f"{aid}-{what}")

    # ------------------------------------------------------------ JSON API

    @routes.get("/api/analyses")
    async def analyses(request: web.Request) -> web.Response:
        return _json([a.to_json() for a in await ctx.store.list_analyses()])

    @routes.get("/api/analyses/{analysis_id}")
    async def analysis(request: web.Request) -> web.Response:
        return _json(await web_data.analysis_json(ctx.store, request.match_info["analysis_id"]))

    @routes.get("/api/analyses/{analysis_id}/why-not")
    async def why_not(request: web.Request) -> web.Response:
        aid, chunk_id, record = request.match_info["analysis_id"], request.query.get("chunk", ""), request.query.get("record", "")
        return _json(await web_data.why_not_json(ctx.store, aid, chunk_id, record, limit_per_table=limit))

    @routes.get("/api/analyses/{analysis_id}/chunks/{chunk_id:.+}")
    async def chunk(request: web.Request) -> web.Response:
        aid, chunk_id = request.match_info["analysis_id"], request.match_info["chunk_id"]
        return _json(await web_data.chunk_detail(ctx.store, aid, chunk_id))

    @routes.get("/api/diff")
    async def diff_api(request: web.Request) -> web.Response:
        q = request.query
        return _json(await diff_results(ctx.store, q.get("a", ""), q.get("b", ""), q.get("analysis", "")))

    @routes.post("/api/analyses/{analysis_id}/replay")
    async def replay_api(request: web.Request) -> web.Response:
        """Replay chunks of an analysis: the same pipeline function as the gRPC Replay and `godot-rag replay`."""
        opts = replay_options_of(request.match_info["analysis_id"], json_object_of(await request.read()))
        return _json(replay_json(await start_replay(ctx.store, ctx.bus, ctx.settings, opts)))

    @routes.get("/api/replays/{replay_id}")
    async def replay_state(request: web.Request) -> web.Response:
        return _json(replay_json(await replay_status(ctx.store, request.match_info["replay_id"])))

    @routes.post("/api/analyses")
    async def submit(request: web.Request) -> web.Response:
        return _json(await web_data.submit_json(ctx.store, ctx.bus, ctx.settings, await request.read(), request.remote or ""))

    routes.static("/static", str(pkg.joinpath("static")), append_version=False)
    app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[guard, errors])
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
