"""The web screen's pages: sign-in, analyses, the live chunk list (server-sent events), the file view and the
diff. Each handler decodes the request, calls one function of ``godot_rag.pipeline.web_data`` and renders."""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from godot_rag.errors import AccessDeniedError, InvalidInputError, OverloadedError
from godot_rag.infra.auth import COOKIE_NAME, token_matches
from godot_rag.infra.grpc_edge import http_status_for
from godot_rag.pipeline import web_data
from godot_rag.pipeline import web_views as wv
from godot_rag.pipeline.web_requests import (
    EVENT_STREAM_HEADERS,
    diff_form,
    min_score_of,
    since_of,
    submit_form_of,
    submit_form_values,
)
from services.gateway.web_base import WebParts


def add_page_routes(routes: web.RouteTableDef, parts: WebParts) -> None:
    ctx, page, macros = parts.ctx, parts.page, parts.macros
    token = ctx.settings.auth_token

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

    # ------------------------------------------------------------ analyses

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
            # The form is shown again with what was typed and the reason, instead of an error page.
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
            limit_per_table=parts.limit_per_table,
        )
        return page("file.html", min_score=min_score_of(request.query), **data)

    # ------------------------------------------------------------ diff

    @routes.get("/diff")
    async def diff_page(request: web.Request) -> web.Response:
        return page("diff.html", **await web_data.diff_page(ctx.store, diff_form(request.query)))
