"""The reliability catalogue as tests: each case of tests/integration/reliability_catalogue.py on a real stack.

The slow cases (kills, restarts, LLM faults, load, the large hostile inputs) are marked `reliability` and run
with `make reliability` (or `pytest -m reliability`); the fast ones (most hostile-input rows, in seconds) and
the tests below run in the default suite on the shared stack.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import tempfile
from pathlib import Path

import pytest

from godot_rag import convert
from godot_rag.cli import DEFAULT_PROMPT
from godot_rag.domain.chunking.direct import chunk_direct
from godot_rag.domain.ids import sha256_hex, subject_token
from godot_rag.infra.bus import Bus, Delivery
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.store import Store
from godot_rag.pipeline.chunking import handle_file_task
from godot_rag.pipeline.dead_letters import handle_max_deliveries, settle_dead_letter
from godot_rag.settings import load_settings
from godot_rag.stages import STREAM_CHUNKS, Stage, chunk_subject
from godot_rag.v1 import messages_pb2 as pb
from tests.integration.reliability_catalogue import CASES, Case, Harness

SLOW = [c for c in CASES if c.slow]
FAST = [c for c in CASES if not c.slow]


@pytest.fixture(scope="module")
def harness():
    data_dir = Path(tempfile.mkdtemp(prefix="godot-rag-reliability-"))
    data_dir.chmod(0o755)
    h = Harness(data_dir)
    try:
        yield h
    finally:
        h.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.mark.reliability
@pytest.mark.parametrize("case", SLOW, ids=[c.name for c in SLOW])
def test_catalogue_case(case: Case, harness: Harness, tmp_path: Path):
    tmp_path.chmod(0o755)
    observed = case.run(harness, tmp_path)
    if observed.status == "skipped":
        pytest.skip(observed.note)
    assert case.check(observed), f"{case.name}: expected {case.expected}; observed {observed}"


# ---------------------------------------------------------------- fast cases on the shared stack


@pytest.mark.parametrize("case", FAST, ids=[c.name for c in FAST])
def test_fast_catalogue_case(case: Case, stack, tmp_path: Path):
    tmp_path.chmod(0o755)
    observed = case.run(Harness.adopting(stack.supervisor, stack.runtime), tmp_path)
    if observed.status == "skipped":
        pytest.skip(observed.note)
    assert case.check(observed), f"{case.name}: expected {case.expected}; observed {observed}"


class RecordingBus(Bus):
    """The real bus, also keeping what was published (to see which chunk ids a redelivery hands on)."""

    published: list[str]

    async def publish(self, subject: str, data: bytes, msg_id: str) -> None:
        self.published.append(subject)
        await super().publish(subject, data, msg_id)


async def _context(stack, name: str) -> ServiceContext:
    settings = load_settings({"GODOT_RAG_DATA_DIR": stack.runtime["data_dir"]})
    store = await Store.open(stack.runtime["pg_dsn"])
    plain = await Bus.connect(stack.runtime["nats_url"], name=f"test-{name}")
    bus = RecordingBus(plain.nc)
    bus.published = []
    return ServiceContext(name, settings, store, bus, asyncio.Event())


async def _close(ctx: ServiceContext) -> None:
    await ctx.bus.close()
    await ctx.store.close()


def _scene(marker: str) -> bytes:
    return (
        f'[gd_scene load_steps=2 format=3]\n\n[node name="Root{marker}" type="CharacterBody2D"]\n\n'
        '[node name="Sprite" type="Sprite2D" parent="."]\n'
    ).encode()


async def _analysis_with(ctx: ServiceContext, aid: str, files: dict[str, bytes]) -> None:
    rows = [
        {
            "source_file": name,
            "source_kind": "scene",
            "included": True,
            "excluded_reason": "",
            "sha256": sha256_hex(data),
            "size": len(data),
            "data": data,
        }
        for name, data in files.items()
    ]
    await ctx.store.create_analysis(
        analysis_id=aid,
        project_id=f"test:{aid}",
        prompt=DEFAULT_PROMPT,
        source_origin="local_directory",
        input_ref="test",
        pipeline_version="test",
        files=rows,
    )


def _task(aid: str, name: str, data: bytes) -> bytes:
    req = pb.AnalysisRequest(
        analysis_id=aid,
        prompt=DEFAULT_PROMPT,
        project_id=f"test:{aid}",
        source_file=name,
        source_kind="scene",
        source_sha256=sha256_hex(data),
        source_origin="local_directory",
    )
    return pb.FileTask(analysis_id=aid, request=req).SerializeToString()


async def test_a_redelivered_file_task_hands_on_its_own_chunks_not_a_cached_copy_at_another_path(stack):
    """Identical content at two paths shares one cache entry (written for the first path); a redelivery of the
    second file, its chunks committed, must publish the second file's chunk ids, not the cached first file's."""
    ctx = await _context(stack, "chunker")
    data = _scene(hashlib.sha256(b"cache-path").hexdigest()[:8])
    aid = "acachepath" + hashlib.sha256(data).hexdigest()[:10]
    try:
        await _analysis_with(ctx, aid, {"a.tscn": data, "b.tscn": data})
        await handle_file_task(ctx, _task(aid, "a.tscn", data))  # the cache entry names a.tscn
        await handle_file_task(ctx, _task(aid, "b.tscn", data))
        ctx.bus.published.clear()
        await handle_file_task(ctx, _task(aid, "b.tscn", data))  # the redelivery: b.tscn is already chunked
        own = {subject_token(c.chunk_id) for c in chunk_direct("b.tscn", "scene", data).chunks}
        other = {subject_token(c.chunk_id) for c in chunk_direct("a.tscn", "scene", data).chunks}
        handed_on = {s.rsplit(".", 1)[1] for s in ctx.bus.published if s.startswith("grag.chunk.retrieve.")}
        assert handed_on == own and not handed_on & other
    finally:
        await _close(ctx)


async def test_a_dead_letter_on_the_aggregate_stage_still_finalises_the_analysis(stack):
    """The aggregator gave up on the last unsettled chunk: nothing follows it, so the dead letter finalises."""
    ctx = await _context(stack, "aggregator")
    data = _scene(hashlib.sha256(b"dead-aggregate").hexdigest()[:8])
    aid = "adeadagg" + hashlib.sha256(data).hexdigest()[:10]
    try:
        await _analysis_with(ctx, aid, {"only.tscn": data})
        result = chunk_direct("only.tscn", "scene", data)
        # Committed as the chunker does, but not handed on: the live stack never sees these chunks.
        await ctx.store.save_file_chunks(aid, "only.tscn", convert.to_dict(convert.chunking_to_pb(result, f"test:{aid}")))
        first, *rest = result.chunks
        for c in rest:
            await ctx.store.mark_stage(aid, c.chunk_id, Stage.AGGREGATE, "done", worker="test")
        assert (await ctx.store.get_analysis(aid)).status == "running"
        task = pb.ChunkTask(
            analysis_id=aid,
            trace=pb.ChunkTrace(
                project_id=f"test:{aid}",
                source_file="only.tscn",
                chunk_id=first.chunk_id,
                chunk_order=first.chunk_order,
                chunk_kind=first.chunk_kind,
            ),
        )
        dead = Delivery(chunk_subject(Stage.AGGREGATE, aid, subject_token(first.chunk_id)), task.SerializeToString(), {}, 6, 6)
        await settle_dead_letter(ctx, dead, "gave up after 6 deliveries: test", stage="aggregator")
        assert (await ctx.store.get_analysis(aid)).status == "completed_with_failures"
        assert await ctx.store.get_verdict(aid) is not None
        assert [d.stage for d in await ctx.store.dead_letters(aid)] == ["aggregator"]
    finally:
        await _close(ctx)


async def test_an_advisory_for_a_message_no_longer_in_the_stream_is_still_recorded(stack):
    ctx = await _context(stack, "judge")
    seq = 10**12 + int(hashlib.sha256(b"gone").hexdigest()[:6], 16)
    advisory = Delivery(
        "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.GRAG_CHUNKS.judge",
        f'{{"stream": "{STREAM_CHUNKS}", "consumer": "judge", "stream_seq": {seq}, "deliveries": 6}}'.encode(),
        {},
        1,
        -1,
    )
    try:
        await handle_max_deliveries(ctx, advisory)
        rows = await ctx.store.dead_letters("")
        assert any(r.key == f"{STREAM_CHUNKS}#{seq}" and r.stage == "judge" for r in rows)
    finally:
        await _close(ctx)
