"""Every hop of a chunk continues its analysis's trace, checked span by span in this process.

The stage code (submission, parser/chunker file consumers, retriever, judge, aggregator) runs here, as the
services run it, against a real nats-server started for this test and the stack's real PostgreSQL (its
knowledge base); an OpenTelemetry SDK ``InMemorySpanExporter`` keeps every span. Where
``test_otlp_export.py`` checks what arrives over the wire from six processes, this checks the links
themselves: each chunk's spans, from the file message to its aggregation, hang off the one analysis span.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from godot_rag.domain.judging.backends import RulesBackend
from godot_rag.domain.judging.rules import RenameIndex, shipped_vocabulary
from godot_rag.infra.bus import Bus
from godot_rag.infra.embedded import EmbeddedNats
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.store import Store
from godot_rag.pipeline.judging import JudgeStage
from godot_rag.pipeline.retrieval import RetrieveStage
from godot_rag.pipeline.submit import SubmitInput, collect_and_submit
from godot_rag.settings import load_settings
from services.aggregator import consumer as aggregator
from services.chunker import consumer as chunker
from services.judge import consumer as judge
from services.parser import consumer as parser
from services.retriever import consumer as retriever


@pytest.fixture(scope="module")
def spans():
    """An in-memory exporter on this process's SDK tracer provider (installed when none is yet)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        pytest.skip("another tracer provider that is not the SDK's is installed in this process")
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()


@pytest.fixture()
def nats_url(tmp_path):
    server = EmbeddedNats(tmp_path, "127.0.0.1", 0)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _project(root: Path, tag: str) -> Path:
    root.mkdir()
    (root / "project.godot").write_text(f'config_version=4\n\n[application]\n\nconfig/name="t{tag}"\n')
    (root / f"p{tag}.gd").write_text(
        f"extends KinematicBody2D\n\nsignal hit_{tag}\n\n\nfunc _physics_process(delta):\n"
        f'\tvar v{tag} = move_and_slide(Vector2.ZERO, Vector2.UP)\n\n\nfunc f{tag}():\n\tyield(get_tree(), "idle_frame")\n'
    )
    return root


async def test_every_hop_of_a_chunk_shares_its_analysis_trace(stack, spans, nats_url, tmp_path):
    tag = uuid.uuid4().hex[:10]
    settings = load_settings(
        {
            "GODOT_RAG_DATA_DIR": str(tmp_path),
            "GODOT_RAG_PG_DSN": stack.runtime["pg_dsn"],
            "GODOT_RAG_NATS_URL": nats_url,
            "GODOT_RAG_EMBEDDER": "none",
        }
    )
    store = await Store.open(settings.pg_dsn, max_size=8)
    bus = await Bus.connect(nats_url, name="trace-test")
    stop = asyncio.Event()
    ctx = ServiceContext("in-process", settings, store, bus, stop)
    tasks: list[asyncio.Task] = []
    try:
        await bus.ensure_streams()
        index = RenameIndex.from_payloads(await store.api_mapping_payloads(), await asyncio.to_thread(shipped_vocabulary))
        tasks += await parser.start(ctx)
        tasks += await chunker.start(ctx)
        tasks += await retriever.start(ctx, RetrieveStage(ctx, None))
        tasks += await judge.start(ctx, JudgeStage(ctx, RulesBackend(index)))
        tasks += await aggregator.start(ctx)
        spans.clear()
        _, submitted = await collect_and_submit(
            store,
            bus,
            settings,
            SubmitInput(prompt=f"Godot 3 or 4? {tag}", path=str(_project(tmp_path / "p", tag)), local_caller=True),
        )
        aid = submitted[0].analysis_id
        assert submitted[0].created
        status = "running"
        for _ in range(600):  # a bounded wait for the stages to finish, not a timing assertion
            status = (await store.get_analysis(aid)).status
            if status != "running":
                break
            await asyncio.sleep(0.2)
        assert status == "done", status
        chunk_ids = {r["chunk_id"] for r in stack.sql("select chunk_id from godot_rag.chunks where analysis_id = %s", (aid,))}
    finally:
        stop.set()
        await asyncio.wait(tasks, timeout=15)
        for t in ctx.background:
            t.cancel()
        await asyncio.gather(*ctx.background, return_exceptions=True)
        await bus.close()
        await store.close()

    finished = spans.get_finished_spans()
    root = [s for s in finished if s.name == "analysis" and s.attributes.get("godot_rag.analysis_id") == aid]
    assert len(root) == 1
    trace_id = root[0].context.trace_id
    ours = [s for s in finished if s.context.trace_id == trace_id]
    # Every span about this analysis is in its trace, and the trace holds nothing else.
    assert all(s.context.trace_id == trace_id for s in finished if s.attributes.get("godot_rag.analysis_id") == aid)
    assert all(s.attributes.get("godot_rag.analysis_id") in (aid, None) for s in ours)
    by_id = {s.context.span_id: s for s in ours}
    assert [s for s in ours if s.parent is None] == root
    assert all(s.parent.span_id in by_id for s in ours if s.parent is not None)

    def path_to_root(s) -> list[str]:
        names = []
        while s is not None:
            names.append(s.name)
            s = by_id.get(s.parent.span_id) if s.parent is not None else None
        return names

    assert chunk_ids and len(chunk_ids) >= 4
    for cid in chunk_ids:
        hops = [s for s in ours if s.attributes.get("godot_rag.chunk_id") == cid]
        steps = {s.attributes.get("messaging.consumer.group.name") for s in hops}
        assert {"retriever", "judge", "aggregator"} <= steps, (cid, steps)
        for s in hops:
            names = path_to_root(s)
            # Each hop descends from the file message of its file (parser or chunker), under the analysis span.
            assert names[-1] == "analysis" and any(n.startswith(("parser ", "chunker ")) for n in names), (cid, names)
            assert s.attributes["messaging.system"] == "nats"
            assert s.attributes["messaging.destination.name"].startswith("grag.chunk.")
