"""The judge stage: the judgment request of a chunk, the backend's judgment, the stored record.

A judgment is reused by its key (prompt, chunk, evidence, model, prompt
version) across analyses; a failed judgment is stored with its raw output and
reason, never cached, and settles the chunk as failed.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import replace

from godot_rag import convert
from godot_rag.domain.judging.backends import JudgeBackend, judge_once, judgment_key
from godot_rag.domain.models import JUDGMENT_FAILED, Judgment, JudgmentRequest
from godot_rag.domain.retrieval.query import primary_intent
from godot_rag.errors import PoisonError
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.store import Store
from godot_rag.pipeline.stage_runner import DONE, ChunkWork, Outcome
from godot_rag.stages import Status
from godot_rag.v1 import messages_pb2 as pb


class DeclaredNamesCache:
    """The names a file declares, read once per (analysis, file) instead of once per chunk.

    A file's chunks are committed before any of them is published, so the
    answer cannot change while its chunks are being judged.
    """

    def __init__(self, store: Store, max_entries: int = 256):
        self.store = store
        self.max_entries = max_entries
        self.entries: OrderedDict[tuple[str, str], frozenset[str]] = OrderedDict()

    async def get(self, aid: str, source_file: str) -> frozenset[str]:
        key = (aid, source_file)
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        names = frozenset(await self.store.file_declared_names(aid, source_file))
        self.entries[key] = names
        if len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)
        return names


async def build_request(store: Store, aid: str, chunk_id: str, declared_cache: DeclaredNamesCache) -> JudgmentRequest:
    """The judgment request of a committed chunk, from its stored chunk, retrieval and analysis."""
    inputs = await store.judge_inputs(aid, chunk_id)
    if inputs is None:
        raise PoisonError(f"chunk {chunk_id} of analysis {aid} is not recorded")
    if inputs["hits"] is None:
        raise PoisonError(f"chunk {chunk_id} of analysis {aid} reached the judge without a retrieval")
    chunk = convert.chunk_from_pb(convert.from_dict(inputs["chunk"], pb.Chunk))
    hits = tuple(convert.hit_from_pb(convert.from_dict(h, pb.RetrievalHit)) for h in inputs["hits"])
    return JudgmentRequest(
        prompt=inputs["prompt"], chunk=chunk, evidence=hits, source_kind=inputs["source_kind"] or "",
        intent=(inputs["query"] or {}).get("intent") or primary_intent(inputs["prompt"]),
        declared_names=await declared_cache.get(aid, inputs["source_file"]),
        project_symbols=inputs.get("symbol_scope") or "",
        project_id=inputs["project_id"], source_file=inputs["source_file"],
    )


class JudgeStage:
    """The judge stage's work for one chunk: request, cached or fresh judgment, store."""

    def __init__(self, ctx: ServiceContext, backend: JudgeBackend):
        self.ctx = ctx
        self.backend = backend
        self.declared = DeclaredNamesCache(ctx.store)

    async def __call__(self, item: ChunkWork) -> Outcome:
        store = self.ctx.store
        request = await build_request(store, item.analysis_id, item.chunk_id, self.declared)
        key = judgment_key(request, self.backend)
        started = time.perf_counter()
        cached = await store.get_cached_judgment(key)
        judgment: Judgment
        if cached is not None:
            judgment = replace(convert.judgment_from_pb(convert.from_dict(cached, pb.Judgment)), cached=True)
        else:
            # The bus sends progress acks while this runs (a long generation is not redelivered).
            judgment = await judge_once(self.backend, request, last_attempt=item.delivery.last_attempt,
                                        deliveries=item.delivery.num_delivered)
        latency_ms = (time.perf_counter() - started) * 1000
        failed = judgment.status == JUDGMENT_FAILED
        await store.save_judgment_record(
            item.analysis_id, item.chunk_id, judgment_key=key, judgment=convert.to_dict(convert.judgment_to_pb(judgment)),
            latency_ms=latency_ms, cache=not failed and not judgment.cached,
        )
        if failed:
            return Outcome(Status.FAILED, judgment.error or "judgment failed")
        return DONE
