"""The judge stage: the judgment request of a chunk, the backend's judgment, the stored record.

A judgment is reused by its key (prompt, chunk, evidence, model, prompt
version) across analyses; a failed judgment is stored with its raw output and
reason, never cached, and settles the chunk as failed.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

from godot_rag import convert
from godot_rag.domain.aggregation.versions import judgment_config, judgment_version_id
from godot_rag.domain.judging.backends import CascadeBackend, JudgeBackend, LLMBackend, RulesBackend, judge_once, judgment_key
from godot_rag.domain.judging.rules import RenameIndex
from godot_rag.domain.lru import Lru
from godot_rag.domain.models import JUDGMENT_FAILED, Judgment, JudgmentRequest, RetrievalHit
from godot_rag.domain.retrieval.query import primary_intent
from godot_rag.errors import InvalidInputError, PoisonError
from godot_rag.infra.llm_client import LLMClient
from godot_rag.infra.rows import JudgeInputs
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.store import Store
from godot_rag.pipeline.stage_runner import ChunkWork, Outcome, each
from godot_rag.prompts import JUDGE_PROMPT_VERSION, judge_prompts
from godot_rag.settings import Settings
from godot_rag.stages import Status
from godot_rag.v1 import messages_pb2 as pb


def check_judge_config(settings: Settings, judge: str, prompt_version: str, cascade: str) -> None:
    """A replay's judge configuration is usable by this stack (raises InvalidInputError otherwise)."""
    if judge not in ("rules", "llm"):
        raise InvalidInputError(f"judge must be 'rules' or 'llm', not {judge!r}")
    if judge == "llm":
        if not settings.llm_url or not settings.llm_model:
            raise InvalidInputError("judge=llm needs GODOT_RAG_LLM_URL and GODOT_RAG_LLM_MODEL on the stack")
        if cascade not in ("all", "ambiguous"):
            raise InvalidInputError(f"cascade must be 'all' or 'ambiguous', not {cascade!r}")
        try:
            judge_prompts(prompt_version or JUDGE_PROMPT_VERSION)
        except FileNotFoundError as exc:
            raise InvalidInputError(f"no prompt files for version {prompt_version!r}") from exc


class JudgeBackends:
    """The stack's own judge, and the configurations replays ask for (built once each, then kept)."""

    def __init__(self, settings: Settings, index: RenameIndex | None, default: JudgeBackend):
        self.settings = settings
        self.index = index
        self.default = default
        self._built: dict[tuple, JudgeBackend] = {}

    def for_replay(self, spec: pb.ReplaySpec | None) -> JudgeBackend:
        if spec is None or not spec.judge:
            return self.default
        key = (spec.judge, spec.prompt_version, spec.cascade, spec.cascade_threshold)
        if key not in self._built:
            self._built[key] = self._build(spec)
        return self._built[key]

    def _build(self, spec: pb.ReplaySpec) -> JudgeBackend:
        if self.index is None:
            raise PoisonError("this judge has no rename index to build a replay's judge from")
        try:
            return build_backend(
                self.settings,
                self.index,
                spec.judge,
                prompt_version=spec.prompt_version,
                cascade=spec.cascade,
                threshold=spec.cascade_threshold,
            )
        except InvalidInputError as exc:
            raise PoisonError(f"replay {spec.replay_id}: {exc}") from exc


def build_backend(
    settings: Settings, index: RenameIndex, judge: str, *, prompt_version: str = "", cascade: str = "", threshold: float = 0.0
) -> JudgeBackend:
    """The judge backend of a configuration (the stack's own, or a replay's); unset parts come from ``settings``."""
    cascade = cascade or settings.judge_cascade
    check_judge_config(settings, judge, prompt_version, cascade)
    rules = RulesBackend(index)
    if judge == "rules":
        return rules
    llm = LLMBackend(LLMClient.from_settings(settings), judge_prompts(prompt_version or JUDGE_PROMPT_VERSION))
    return CascadeBackend(rules, llm, cascade, threshold or settings.judge_cascade_threshold)


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


class EvidenceCache(Lru[str, tuple[RetrievalHit, ...]]):
    """Hit lists as the judge's evidence, by the list's name (``JudgeInputs.hits_sha256``): the chunks of a
    project's scenes and resources share a few dozen lists, each converted once. Shared, never modified."""

    def __init__(self, capacity: int = 256):
        super().__init__(capacity)

    def of(self, inputs: JudgeInputs) -> tuple[RetrievalHit, ...]:
        sha = inputs.hits_sha256
        held = self.get(sha) if sha is not None else None
        if held is not None:
            return held
        hits = tuple(convert.hit_from_dict(h) for h in inputs.hits or ())
        if sha is not None:
            self.put(sha, hits)
        return hits


async def build_request(
    store: Store,
    aid: str,
    chunk_id: str,
    declared_cache: DeclaredNamesCache,
    inputs: JudgeInputs | None = None,
    evidence_cache: EvidenceCache | None = None,
) -> JudgmentRequest:
    """The judgment request of a committed chunk, from its stored chunk, retrieval and analysis."""
    if inputs is None:
        inputs = await store.judge_inputs(aid, chunk_id)
    if inputs is None:
        raise PoisonError(f"chunk {chunk_id} of analysis {aid} is not recorded")
    if inputs.hits is None:
        raise PoisonError(f"chunk {chunk_id} of analysis {aid} reached the judge without a retrieval")
    chunk = convert.chunk_from_dict(inputs.chunk)
    hits = (evidence_cache or EvidenceCache(0)).of(inputs)
    return JudgmentRequest(
        prompt=inputs.prompt,
        chunk=chunk,
        evidence=hits,
        source_kind=inputs.source_kind or "",
        intent=(inputs.query or {}).get("intent") or primary_intent(inputs.prompt),
        declared_names=await declared_cache.get(aid, inputs.source_file),
        project_symbols=inputs.symbol_scope or "",
        project_id=inputs.project_id,
        source_file=inputs.source_file,
    )


class JudgeStage:
    """The judge stage's work for one chunk: request, cached or fresh judgment, store."""

    def __init__(self, ctx: ServiceContext, backend: JudgeBackend, index: RenameIndex | None = None):
        self.ctx = ctx
        self.backend = backend
        self.backends = JudgeBackends(ctx.settings, index, backend)
        self.declared = DeclaredNamesCache(ctx.store)
        self.evidence = EvidenceCache()

    async def run_batch(self, items: Sequence[ChunkWork]) -> list[Outcome | BaseException]:
        """Every chunk of a batch at once: their reads and writes made in the same turn are one statement each."""
        return await each(items, self)

    async def __call__(self, item: ChunkWork) -> Outcome:
        store = self.ctx.store
        backend = self.backends.for_replay(item.replay)
        inputs = await store.judge_inputs(item.analysis_id, item.chunk_id)
        request = await build_request(store, item.analysis_id, item.chunk_id, self.declared, inputs, self.evidence)
        retrieval_version = (inputs.retrieval_version if inputs is not None else None) or ""
        # A judge replay is one version whatever each chunk's retrieval: it is named by the
        # retrieval version of the version it replays over (the chunk's own is kept per row).
        label = item.replay.retrieval_version if item.replay is not None and item.replay.retrieval_version else retrieval_version
        version = judgment_version_id(
            judge_kind=backend.kind, model=backend.model, prompt_version=backend.prompt_version, retrieval_version=label
        )
        config = judgment_config(
            judge_kind=backend.kind, model=backend.model, prompt_version=backend.prompt_version, retrieval_version=label
        )
        replay_id, base_version = "", ""
        if item.replay is not None:
            replay_id = item.replay.replay_id
            replay = await store.replay_row(replay_id)
            base_version = replay.base_version if replay is not None else ""
            await store.set_replay_judgment_version(replay_id, version)
        key = judgment_key(request, backend)
        started = time.perf_counter()
        cached = await store.get_cached_judgment(key)
        judgment: Judgment
        if cached is not None:
            judgment = replace(convert.judgment_from_dict(cached), cached=True)
        else:
            # The bus sends progress acks while this runs (a long generation is not redelivered).
            judgment = await judge_once(
                backend, request, last_attempt=item.delivery.last_attempt, deliveries=item.delivery.num_delivered
            )
        latency_ms = (time.perf_counter() - started) * 1000
        failed = judgment.status == JUDGMENT_FAILED
        await store.save_judgment_record(
            item.analysis_id,
            item.chunk_id,
            judgment_key=key,
            judgment=convert.judgment_to_dict(judgment),
            latency_ms=latency_ms,
            cache=not failed and not judgment.cached,
            version_id=version,
            retrieval_version=retrieval_version,
            config=config,
            replay_id=replay_id,
            base_version=base_version if base_version != version else "",
        )
        if failed:
            return Outcome(Status.FAILED, judgment.error or "judgment failed", version=version)
        return Outcome(Status.DONE, version=version)
