"""The web screen: analyses, a live per-chunk list, the file view with each
chunk's text, search clues, candidates and judgment, and the JSON API.
Served by the gateway; pages are rendered from ``godot_rag.pipeline.web_data``
with autoescaping templates, and work without JavaScript where they can.

This module builds the application: the two middlewares (typed errors mapped once, the access guard) and the
static files; the routes are in ``web_pages`` (HTML) and ``web_api`` (JSON and downloads)."""

from __future__ import annotations

import logging
from importlib import resources

from aiohttp import web

from godot_rag.errors import GodotRagError
from godot_rag.infra.auth import COOKIE_NAME
from godot_rag.infra.grpc_edge import http_status_for
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline import web_views as wv
from godot_rag.pipeline.web_requests import SECURITY_HEADERS, access_refusal, allowed_host_names, answers_json, error_title
from services.gateway.web_api import add_api_routes
from services.gateway.web_base import WebParts, json_response
from services.gateway.web_pages import add_page_routes

log = logging.getLogger(__name__)


def build_app(ctx: ServiceContext) -> web.Application:
    pkg = resources.files("services.gateway")
    env = wv.template_environment(str(pkg.joinpath("templates")))
    parts = WebParts(ctx, env, env.get_template("macros.html").module)
    allowed = allowed_host_names(ctx.settings.host)
    token = ctx.settings.auth_token

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
                return json_response({"error": str(exc)}, status)
            return parts.page("error.html", status, title=error_title(status), message=str(exc))

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
                return json_response({"error": refusal.message}, refusal.status)
            return web.Response(text=refusal.message, status=refusal.status)
        response = await handler(request)
        if not response.prepared:
            response.headers.update(SECURITY_HEADERS)
        return response

    routes = web.RouteTableDef()
    add_page_routes(routes, parts)
    add_api_routes(routes, parts)
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
