"""What the web screen's route modules share: the rendering environment and the JSON response."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web
from jinja2 import Environment

from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.web_requests import to_json_text


def json_response(data, status: int = 200) -> web.Response:
    return web.Response(text=to_json_text(data), status=status, content_type="application/json")


@dataclass(frozen=True)
class WebParts:
    ctx: ServiceContext
    env: Environment
    macros: Any  # the macros template's module: its macros looked up by name

    @property
    def limit_per_table(self) -> int:
        return self.ctx.settings.retrieval_limit_per_table

    def page(self, name: str, status: int = 200, **data) -> web.Response:
        return web.Response(text=self.env.get_template(name).render(**data), status=status, content_type="text/html")
