"""Parser.Parse and Chunker.Chunk as standalone gRPC calls on a real server (port 0)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import grpc
import pytest

from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc
from services.chunker.servicer import ChunkerServicer
from services.parser.servicer import ParserServicer


@pytest.fixture
async def server():
    srv = grpc.aio.server()
    sgrpc.add_ParserServicer_to_server(ParserServicer(), srv)
    sgrpc.add_ChunkerServicer_to_server(ChunkerServicer(), srv)
    port = srv.add_insecure_port("127.0.0.1:0")
    await srv.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    yield channel
    await channel.close()
    await srv.stop(None)


async def test_parse_mini_dodge_player(server, repo: Path):
    from godot_rag.domain.ingest.policy import split_expanded_text

    blocks = {b.source_file: b for b in split_expanded_text((repo / "samples" / "mini_dodge.txt").read_text())}
    data = blocks["player.gd"].text.encode()
    out = await sgrpc.ParserStub(server).Parse(
        spb.ParseRequest(
            project_id="p",
            source_file="player.gd",
            source_kind="gdscript",
            source_text=data,
            source_sha256=hashlib.sha256(data).hexdigest(),
        )
    )
    assert out.status == "ok"
    assert [(c.span.start_line, c.span.end_line) for c in out.chunks] == [(1, 1), (3, 3), (5, 6), (8, 10), (12, 26), (28, 31)]
    assert out.chunks[4].chunk_id == "player.gd:function:_process"
    for c in out.chunks:
        assert data[c.span.start_byte : c.span.end_byte].decode() == c.code_text


async def test_parse_reports_sha_mismatch_as_failed(server):
    out = await sgrpc.ParserStub(server).Parse(
        spb.ParseRequest(source_file="a.gd", source_kind="gdscript", source_text=b"extends Node\n", source_sha256="0" * 64)
    )
    assert out.status == "failed" and not out.chunks and out.errors


async def test_parse_rejects_other_kinds(server):
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await sgrpc.ParserStub(server).Parse(spb.ParseRequest(source_file="a.tscn", source_kind="scene", source_text=b"x"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_chunk_scene(server):
    text = b'[gd_scene load_steps=3 format=3 uid="uid://mini"]\n\n[ext_resource type="Script" path="res://player.gd" id="1"]\n\n[node name="Player" type="Area2D"]\nscript = ExtResource("1")\n'
    out = await sgrpc.ChunkerStub(server).Chunk(spb.ChunkRequest(source_file="player.tscn", source_kind="scene", source_text=text))
    assert out.status == "ok"
    assert [c.chunk_kind for c in out.chunks] == ["header", "ext_resource", "node"]
    assert "res://player.gd" in out.chunks[2].reference_candidates


async def test_chunk_rejects_gdscript(server):
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await sgrpc.ChunkerStub(server).Chunk(spb.ChunkRequest(source_file="a.gd", source_kind="gdscript", source_text=b"x"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("source_file", ["../../etc/passwd", "/etc/passwd", "a/../../b.gd", "C:\\x.gd", "a\0.gd"])
async def test_source_file_cannot_leave_the_project(server, source_file: str):
    for call in (
        sgrpc.ParserStub(server).Parse(
            spb.ParseRequest(source_file=source_file, source_kind="gdscript", source_text=b"extends Node\n")
        ),
        sgrpc.ChunkerStub(server).Chunk(
            spb.ChunkRequest(source_file=source_file, source_kind="scene", source_text=b"[gd_scene format=3]\n")
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
