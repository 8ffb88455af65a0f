"""The web screen maps a handler's typed error once: the status of infra/grpc_edge.http_status_for, in JSON
for the API, the exports and the event stream, on a page (with the security headers) for the pages."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from godot_rag.errors import GodotRagError, NotFoundError, StoreError
from godot_rag.infra.service import ServiceContext
from godot_rag.settings import load_settings
from services.gateway.web import build_app


class RaisingStore:
    """A store whose every call raises the given typed error: what is tested is the edge's mapping of it."""

    def __init__(self, error: GodotRagError):
        self.error = error

    def __getattr__(self, name: str):
        async def call(*args, **kwargs):
            raise self.error

        return call


@pytest.fixture
async def client_for(tmp_path: Path):
    clients: list[TestClient] = []

    async def make(error: GodotRagError) -> TestClient:
        settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path)})
        ctx = ServiceContext("web-test", settings, RaisingStore(error), None, asyncio.Event())  # type: ignore[arg-type]
        client = TestClient(TestServer(build_app(ctx)))
        await client.start_server()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


async def test_a_missing_analysis_is_404_in_json_for_the_api_and_on_a_page_for_pages(client_for):
    client = await client_for(NotFoundError("analysis a1 is not recorded"))
    for path in ("/api/analyses/a1", "/a/a1/export/chunks.csv", "/a/a1/events", "/api/analyses/a1/chunks/x.gd:function:f"):
        resp = await client.get(path)
        assert resp.status == 404, path
        assert resp.content_type == "application/json", path
        assert (await resp.json())["error"] == "analysis a1 is not recorded", path
    for path in ("/a/a1", "/a/a1/f/player.gd", "/a/a1/part/verdict"):
        resp = await client.get(path)
        assert resp.status == 404, path
        assert resp.content_type == "text/html", path
        body = await resp.text()
        assert "<h1>Not found</h1>" in body and "analysis a1 is not recorded" in body, path
        assert resp.headers["X-Frame-Options"] == "DENY", path


async def test_an_unreachable_database_is_503_and_input_errors_are_400(client_for):
    client = await client_for(StoreError("database unavailable: connection refused"))
    api = await client.get("/api/analyses")
    assert api.status == 503 and (await api.json())["error"] == "database unavailable: connection refused"
    page = await client.get("/")
    assert page.status == 503 and "<h1>Unavailable</h1>" in await page.text()
    missing = await client.get("/api/analyses/a1/why-not?chunk=x.gd:function:f")
    assert missing.status == 400 and (await missing.json())["error"] == "give chunk and record"
