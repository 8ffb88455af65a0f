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
    assert await code_of(aggregator.GetVerdict(spb.VerdictRequest(analysis_id=submitted.analysis_id))) == \
        grpc.StatusCode.FAILED_PRECONDITION
    listed = await aggregator.ListChunks(spb.ListChunksRequest(analysis_id=submitted.analysis_id))
    assert list(listed.chunks) == []  # not chunked yet: no chunk is invented


async def test_retriever_builds_queries_and_maps_its_errors(channel):
    retriever = sgrpc.RetrieverStub(channel)
    chunk = parse_gdscript("player.gd", b"extends Node\n\nfunc _ready():\n\tyield(get_tree(), \"idle_frame\")\n").chunks[1]
    query = await retriever.BuildQuery(spb.BuildQueryRequest(prompt="Is this Godot 3?", chunk=convert.chunk_to_pb(chunk)))
    assert "yield" in query.raw_chunk_text and "player.gd" not in query.query_text  # the path never enters a query
    empty = pb.RetrieverQuery()
    assert await code_of(retriever.Search(spb.SearchRequest(query=empty))) == grpc.StatusCode.INVALID_ARGUMENT
    # The knowledge base of this fresh database is not built: worth retrying later, not a bad request.
    assert await code_of(retriever.Search(spb.SearchRequest(query=query))) == grpc.StatusCode.UNAVAILABLE
