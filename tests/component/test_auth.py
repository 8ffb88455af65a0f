"""The bearer token on a real gRPC server (port 0) and on the web screen's real aiohttp app."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest
from aiohttp.test_utils import TestClient, TestServer
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from godot_rag.infra.auth import COOKIE_NAME, auth_metadata, server_interceptors
from godot_rag.infra.service import ServiceContext
from godot_rag.settings import load_settings
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc
from services.gateway.web import build_app
from services.parser.servicer import ParserServicer

TOKEN = "a-long-random-test-token-0123456789"


@pytest.fixture
async def channel():
    srv = grpc.aio.server(interceptors=server_interceptors(TOKEN))
    sgrpc.add_ParserServicer_to_server(ParserServicer(), srv)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, srv)
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection([reflection.SERVICE_NAME, health.SERVICE_NAME], srv)
    port = srv.add_insecure_port("127.0.0.1:0")
    await srv.start()
    chan = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    yield chan
    await chan.close()
    await srv.stop(None)


PARSE = spb.ParseRequest(source_file="a.gd", source_kind="gdscript", source_text=b"extends Node\n")


async def test_grpc_calls_need_the_token_but_health_checks_do_not(channel):
    parser = sgrpc.ParserStub(channel)
    for metadata in ((), (("authorization", "Bearer wrong"),), (("authorization", TOKEN),)):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await parser.Parse(PARSE, metadata=metadata)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    out = await parser.Parse(PARSE, metadata=auth_metadata(TOKEN))
    assert out.status == "ok"
    reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_streaming_calls_are_refused_the_same_way(channel):
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    ask = reflection_pb2.ServerReflectionRequest(list_services="")

    async def one(metadata):
        async for reply in stub.ServerReflectionInfo(iter([ask]), metadata=metadata):
            return reply
        return None

    with pytest.raises(grpc.aio.AioRpcError) as err:
        await one(())
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    reply = await one(auth_metadata(TOKEN))
    assert reflection.SERVICE_NAME in [s.name for s in reply.list_services_response.service]


def web_context(tmp_path: Path, **env: str) -> ServiceContext:
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), **{f"GODOT_RAG_{k.upper()}": v for k, v in env.items()}})
    # No store or bus: every request below is answered before either is needed.
    return ServiceContext("web-test", settings, None, None, asyncio.Event())  # type: ignore[arg-type]


@pytest.fixture
async def web_client(tmp_path: Path):
    client = TestClient(TestServer(build_app(web_context(tmp_path, auth_token=TOKEN, max_prompt_bytes="1000"))))
    await client.start_server()
    yield client
    await client.close()


async def test_the_web_screen_needs_the_token_as_header_or_cookie(web_client: TestClient):
    body = json.dumps({"prompt": "x" * 5000, "snippet": "extends Node"})
    headers = {"Content-Type": "application/json"}
    refused = await web_client.post("/api/analyses", data=body, headers=headers)
    assert refused.status == 401
    page = await web_client.get("/", allow_redirects=False)
    assert page.status == 303 and page.headers["Location"] == "/login"
    # With the token the request reaches the endpoint, which refuses the oversized prompt before recording anything.
    allowed = await web_client.post("/api/analyses", data=body, headers={**headers, "Authorization": f"Bearer {TOKEN}"})
    assert allowed.status == 400 and "over the limit of 1000" in (await allowed.json())["error"]
    wrong = await web_client.post("/login", data={"token": "nope"}, allow_redirects=False)
    assert wrong.status == 401 and COOKIE_NAME not in wrong.cookies
    signed = await web_client.post("/login", data={"token": TOKEN}, allow_redirects=False)
    assert signed.status == 303 and "httponly" in signed.headers["Set-Cookie"].lower()
    assert "samesite=strict" in signed.headers["Set-Cookie"].lower()
    by_cookie = await web_client.post("/api/analyses", data=body, headers=headers)  # the client keeps the cookie
    assert by_cookie.status == 400


async def test_without_a_token_on_loopback_the_web_screen_is_open(tmp_path: Path):
    client = TestClient(TestServer(build_app(web_context(tmp_path, max_prompt_bytes="1000"))))
    await client.start_server()
    try:
        resp = await client.post(
            "/api/analyses", data=json.dumps({"prompt": "x" * 5000, "snippet": "a"}), headers={"Content-Type": "application/json"}
        )
        assert resp.status == 400
    finally:
        await client.close()


async def test_static_files_cannot_be_left_by_their_path(web_client: TestClient):
    for path in ("/static/../web.py", "/static/..%2fweb.py", "/static/%2e%2e/%2e%2e/settings.py", "/static//etc/passwd"):
        resp = await web_client.get(path, allow_redirects=False, headers={"Authorization": f"Bearer {TOKEN}"})
        body = await resp.text()
        assert resp.status in (403, 404), path
        assert "import" not in body and "root:" not in body
