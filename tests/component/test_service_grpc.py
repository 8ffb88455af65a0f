"""Gateway, Retriever and Aggregator servicers on real gRPC ports (port 0), over a real PostgreSQL and NATS.

The stage consumers are not started: these tests call each servicer the way
another system would, and check the answers and the status codes the typed
errors map to (one mapping, ``godot_rag.infra.grpc_edge``).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import grpc
import pytest

from godot_rag import convert
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.infra.bus import Bus
from godot_rag.infra.embedded import EmbeddedNats, EmbeddedPostgres
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.store import Store, migrate_sync
from godot_rag.pipeline.retrieval import RetrieveStage
from godot_rag.settings import load_settings
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc
from services.aggregator.servicer import AggregatorServicer
from services.gateway.servicer import AnalysisServicer
from services.retriever.servicer import RetrieverServicer


@pytest.fixture(scope="module")
def servers():
    # PostgreSQL runs as the 'pgserver' user when the tests run as root: the folder must be reachable by it.
    data_dir = Path(tempfile.mkdtemp(prefix="godot-rag-component-"))
    data_dir.chmod(0o755)
    pg = EmbeddedPostgres(data_dir)
    nats = EmbeddedNats(data_dir, "127.0.0.1", 0)
    try:
        dsn = pg.start()
        migrate_sync(dsn)
        nats.start()
        yield data_dir, dsn, nats.url
    finally:
        nats.stop()
        pg.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
async def channel(servers):
    data_dir, dsn, nats_url = servers
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(data_dir), "GODOT_RAG_PG_DSN": dsn, "GODOT_RAG_NATS_URL": nats_url})
    store = await Store.open(dsn)
    bus = await Bus.connect(nats_url, name="component-test")
    await bus.ensure_streams()
    ctx = ServiceContext("component", settings, store, bus, asyncio.Event())
    server = grpc.aio.server()
    sgrpc.add_AnalysisServiceServicer_to_server(AnalysisServicer(ctx), server)
    sgrpc.add_AggregatorServicer_to_server(AggregatorServicer(ctx), server)
    # Lexical-only retrieval: the model is not what these tests are about.
    sgrpc.add_RetrieverServicer_to_server(RetrieverServicer(RetrieveStage(ctx, None)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    chan = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    yield chan
    await chan.close()
    await server.stop(None)
    await bus.close()
    await store.close()


async def code_of(call) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    return err.value.code()


async def test_gateway_maps_bad_input_and_unknown_analyses(channel):
    gateway = sgrpc.AnalysisServiceStub(channel)
    assert await code_of(gateway.Submit(spb.SubmitRequest(prompt="", snippet="extends Node"))) == grpc.StatusCode.INVALID_ARGUMENT
    assert await code_of(gateway.Submit(spb.SubmitRequest(prompt="Godot 3 or 4?"))) == grpc.StatusCode.INVALID_ARGUMENT
    assert await code_of(gateway.Get(spb.GetRequest(analysis_id="nope"))) == grpc.StatusCode.NOT_FOUND
    stream = gateway.WatchProgress(spb.GetRequest(analysis_id="nope"))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        async for _ in stream:
            pass
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_gateway_replay_versions_diff_and_trace_map_their_errors(channel):
    gateway = sgrpc.AnalysisServiceStub(channel)
    nope = "nope"
    assert await code_of(gateway.Replay(spb.ReplayRequest(analysis_id=nope))) == grpc.StatusCode.NOT_FOUND
    assert await code_of(gateway.GetReplay(spb.GetReplayRequest(replay_id=nope))) == grpc.StatusCode.NOT_FOUND
    assert await code_of(gateway.ListVersions(spb.GetRequest(analysis_id=nope))) == grpc.StatusCode.NOT_FOUND
    assert await code_of(gateway.GetVerdict(spb.VerdictVersionRequest(analysis_id=nope))) == grpc.StatusCode.NOT_FOUND
    assert await code_of(gateway.GetChunkTrace(spb.ChunkTraceRequest(analysis_id=nope, chunk_id="x"))) == grpc.StatusCode.NOT_FOUND
    assert await code_of(gateway.ListChunks(spb.ListChunksPageRequest(analysis_id=nope))) == grpc.StatusCode.NOT_FOUND
    assert await code_of(gateway.Diff(spb.DiffRequest(a="", b=""))) == grpc.StatusCode.INVALID_ARGUMENT
    assert await code_of(gateway.Diff(spb.DiffRequest(a=nope, b="other"))) == grpc.StatusCode.NOT_FOUND
    submitted = await gateway.Submit(spb.SubmitRequest(prompt="Godot 3 or 4?", snippet="extends Sprite\n"))
    aid = submitted.analysis_id
    # No consumer runs here: the analysis stays running, so it cannot be replayed yet.
    assert await code_of(gateway.Replay(spb.ReplayRequest(analysis_id=aid))) == grpc.StatusCode.FAILED_PRECONDITION
    assert (
        await code_of(gateway.ListChunks(spb.ListChunksPageRequest(analysis_id=aid, needs_migration="maybe")))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert (
        await code_of(gateway.ListChunks(spb.ListChunksPageRequest(analysis_id=aid, page_token="x")))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert (
        await code_of(gateway.GetVerdict(spb.VerdictVersionRequest(analysis_id=aid, version_id="j-none")))
        == grpc.StatusCode.NOT_FOUND
    )
    page = await gateway.ListChunks(spb.ListChunksPageRequest(analysis_id=aid))
    assert page.total == 0 and page.next_page_token == ""


async def test_gateway_records_a_snippet_and_reports_it(channel):
    gateway = sgrpc.AnalysisServiceStub(channel)
    submitted = await gateway.Submit(spb.SubmitRequest(prompt="Godot 3 or 4?", snippet="extends KinematicBody2D\n"))
    assert submitted.source_origin == "pasted_snippet" and submitted.files_included == 1 and submitted.projects[0].created
    again = await gateway.Submit(spb.SubmitRequest(prompt="Godot 3 or 4?", snippet="extends KinematicBody2D\n"))
    assert again.analysis_id == submitted.analysis_id and not again.projects[0].created  # ids come from the content
    result = await gateway.Get(spb.GetRequest(analysis_id=submitted.analysis_id))
    assert result.status == "running" and [f.source_file for f in result.files] == [submitted.input_ref]


async def test_aggregator_answers_not_found_then_not_ready(channel):
    aggregator = sgrpc.AggregatorStub(channel)
    assert await code_of(aggregator.GetVerdict(spb.VerdictRequest(analysis_id="nope"))) == grpc.StatusCode.NOT_FOUND
    assert await code_of(aggregator.ListChunks(spb.ListChunksRequest(analysis_id="nope"))) == grpc.StatusCode.NOT_FOUND
    gateway = sgrpc.AnalysisServiceStub(channel)
    submitted = await gateway.Submit(spb.SubmitRequest(prompt="Godot 3 or 4?", snippet="extends Node2D\n"))
    # No consumer runs here, so the analysis stays running: its verdict is not there yet.
    assert (
        await code_of(aggregator.GetVerdict(spb.VerdictRequest(analysis_id=submitted.analysis_id)))
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    listed = await aggregator.ListChunks(spb.ListChunksRequest(analysis_id=submitted.analysis_id))
    assert list(listed.chunks) == []  # not chunked yet: no chunk is invented


async def test_retriever_builds_queries_and_maps_its_errors(channel):
    retriever = sgrpc.RetrieverStub(channel)
    chunk = parse_gdscript("player.gd", b'extends Node\n\nfunc _ready():\n\tyield(get_tree(), "idle_frame")\n').chunks[1]
    query = await retriever.BuildQuery(spb.BuildQueryRequest(prompt="Is this Godot 3?", chunk=convert.chunk_to_pb(chunk)))
    assert "yield" in query.raw_chunk_text and "player.gd" not in query.query_text  # the path never enters a query
    empty = pb.RetrieverQuery()
    assert await code_of(retriever.Search(spb.SearchRequest(query=empty))) == grpc.StatusCode.INVALID_ARGUMENT
    # The knowledge base of this fresh database is not built: worth retrying later, not a bad request.
    assert await code_of(retriever.Search(spb.SearchRequest(query=query))) == grpc.StatusCode.UNAVAILABLE


async def test_an_oversized_prompt_is_refused_before_anything_is_recorded(channel, servers):
    _, dsn, _ = servers
    store = await Store.open(dsn)
    try:
        before = len(await store.list_analyses())
        gateway = sgrpc.AnalysisServiceStub(channel)
        # Over the 1 MB NATS payload the prompt used to be recorded, then fail every publish.
        prompt = "Is this Godot 3? " + "x" * (1024 * 1024 + 10)
        assert (
            await code_of(gateway.Submit(spb.SubmitRequest(prompt=prompt, snippet="extends KinematicBody2D\n")))
            == grpc.StatusCode.INVALID_ARGUMENT
        )
        assert len(await store.list_analyses()) == before
    finally:
        await store.close()


async def test_an_empty_folder_or_archive_is_refused_before_anything_is_recorded(channel, servers, tmp_path):
    import io
    import zipfile

    _, dsn, _ = servers
    store = await Store.open(dsn)
    try:
        before = len(await store.list_analyses())
        gateway = sgrpc.AnalysisServiceStub(channel)
        (tmp_path / "empty").mkdir()
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await gateway.Submit(spb.SubmitRequest(prompt="Godot 3 or 4?", path=str(tmp_path / "empty")))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "no files in the input" in (err.value.details() or "")
        archive = io.BytesIO()
        zipfile.ZipFile(archive, "w").close()
        request = spb.SubmitRequest(prompt="Godot 3 or 4?", archive=archive.getvalue(), archive_name="empty.zip")
        assert await code_of(gateway.Submit(request)) == grpc.StatusCode.INVALID_ARGUMENT
        assert len(await store.list_analyses()) == before
    finally:
        await store.close()


async def test_a_server_path_is_local_only_and_a_remote_caller_gets_permission_denied(channel, tmp_path):
    from godot_rag.errors import AccessDeniedError
    from godot_rag.infra.grpc_edge import status_for
    from godot_rag.pipeline.submit import SubmitInput, collect_and_submit

    (tmp_path / "player.gd").write_text("extends KinematicBody2D\n")
    gateway = sgrpc.AnalysisServiceStub(channel)
    # This test's client connects over loopback to a loopback gateway: its own path is readable.
    local = await gateway.Submit(spb.SubmitRequest(prompt="Godot 3 or 4?", path=str(tmp_path)))
    assert local.files_included == 1
    # The same request from another machine, as the servicer passes it on for a non-loopback peer:
    # refused before the store or the bus is touched (neither is given here).
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path / "d")})
    with pytest.raises(AccessDeniedError) as err:
        await collect_and_submit(
            None,
            None,
            settings,  # type: ignore[arg-type]
            SubmitInput(prompt="p", path=str(tmp_path), client="10.0.0.9", local_caller=False),
        )
    assert status_for(err.value) == grpc.StatusCode.PERMISSION_DENIED


async def test_web_routes_with_paths_never_leave_the_store(servers, tmp_path):
    """File paths in web routes name stored files of an analysis; nothing is read from disk for them."""
    from aiohttp.test_utils import TestClient, TestServer

    from godot_rag.pipeline.submit import SubmitInput, collect_and_submit
    from services.gateway.web import build_app

    data_dir, dsn, nats_url = servers
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(data_dir), "GODOT_RAG_PG_DSN": dsn, "GODOT_RAG_NATS_URL": nats_url})
    store = await Store.open(dsn)
    bus = await Bus.connect(nats_url, name="component-web")
    await bus.ensure_streams()
    ctx = ServiceContext("component-web", settings, store, bus, asyncio.Event())
    _, submitted = await collect_and_submit(
        store,
        bus,
        settings,
        SubmitInput(prompt="Godot 3 or 4?", expanded_text="# player.gd\nextends KinematicBody2D\n", client="test"),
    )
    aid = submitted[0].analysis_id
    client = TestClient(TestServer(build_app(ctx)))
    await client.start_server()
    try:
        assert (await client.get(f"/a/{aid}/f/player.gd")).status == 200
        for path in (
            f"/a/{aid}/f/../../../../etc/passwd",
            f"/a/{aid}/f/..%2f..%2f..%2fetc%2fpasswd",
            f"/a/{aid}/f/%2e%2e/%2e%2e/etc/passwd",
            f"/a/{aid}/f//etc/passwd",
            f"/a/{aid}/f/player.gd/../../../x",
            f"/api/analyses/{aid}/chunks/..%2f..%2fetc%2fpasswd",
            "/a/..%2f..%2fetc%2fpasswd",
        ):
            resp = await client.get(path, allow_redirects=False)
            body = await resp.text()
            assert resp.status in (400, 403, 404), path
            assert "root:" not in body, path
    finally:
        await client.close()
        await bus.close()
        await store.close()


async def test_web_pages_escape_script_in_file_names_chunk_text_and_node_names(servers):
    from aiohttp.test_utils import TestClient, TestServer

    from godot_rag.pipeline.submit import SubmitInput, collect_and_submit
    from services.gateway.web import build_app

    data_dir, dsn, nats_url = servers
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(data_dir), "GODOT_RAG_PG_DSN": dsn, "GODOT_RAG_NATS_URL": nats_url})
    store = await Store.open(dsn)
    bus = await Bus.connect(nats_url, name="component-web-xss")
    await bus.ensure_streams()
    ctx = ServiceContext("component-web", settings, store, bus, asyncio.Event())
    payload = "<script>alert(1)</script>"
    text = (
        f'# {payload}.gd\nextends Node # {payload}\n\n# level.tscn\n[gd_scene format=2]\n\n[node name="{payload}" type="Node2D"]\n'
    )
    _, submitted = await collect_and_submit(
        store, bus, settings, SubmitInput(prompt=f"Godot 3 or 4? {payload}", expanded_text=text, client="test")
    )
    aid = submitted[0].analysis_id
    client = TestClient(TestServer(build_app(ctx)))
    await client.start_server()
    try:
        from urllib.parse import quote

        files = [f.source_file for f in await store.list_files(aid)]
        assert any(payload in f for f in files) and "level.tscn" in files
        for path in ("/", f"/a/{aid}", *(f"/a/{aid}/f/{quote(f, safe='')}" for f in files)):
            resp = await client.get(path)
            body = await resp.text()
            assert resp.status == 200, path
            assert payload not in body, path  # only its escaped form reaches the page
    finally:
        await client.close()
        await bus.close()
        await store.close()
