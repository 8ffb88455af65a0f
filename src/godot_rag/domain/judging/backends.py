"""Judge backends behind one call: JudgmentRequest -> Judgment (with its accounting).

- RulesBackend: the offline rules judge (deterministic, no model).
- LLMBackend: an OpenAI-compatible server (vLLM, llama.cpp) with the versioned
  prompt and the judgment contract; one repair attempt, then a failed
  judgment that keeps the raw output.
- CascadeBackend: the cascade policy over the two ("all" sends every chunk
  to the LLM, "ambiguous" lets confident rules judgments stand).

Every backend checks its output against the judgment contract, so a judgment
that reaches the store is valid or visibly failed. The LLM is reached through
the ``ChatClient`` protocol; the HTTP client that implements it lives in
``godot_rag.infra.llm_client``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import replace
from typing import Protocol

from godot_rag.domain.judging.contract import (
    ContractScope,
    ContractViolation,
    answer_required,
    check_reply,
    contract_for,
    from_judgment,
    to_judgment,
    validate,
)
from godot_rag.domain.judging.project_index import scope_from_json
from godot_rag.domain.judging.rules import RULES_JUDGE_VERSION, RenameIndex, judge_chunk
from godot_rag.domain.models import JUDGMENT_FAILED, JUDGMENT_OK, Judgment, JudgmentRequest
from godot_rag.errors import LLMRequestError, RetryableError
from godot_rag.prompts import Candidate, PromptChunk, PromptSet, judge_prompts, render_messages, render_repair


class ChatReply(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def finish_reason(self) -> str: ...
    @property
    def latency_ms(self) -> float: ...


class ChatClient(Protocol):
    model: str
    max_tokens: int

    async def chat(self, messages: list[dict], schema: dict) -> ChatReply: ...


class JudgeBackend(Protocol):
    kind: str  # rules | llm | cascade
    model: str
    prompt_version: str

    async def judge(self, request: JudgmentRequest) -> Judgment: ...


def scope_of(request: JudgmentRequest, extra_basis_ids: frozenset[str] = frozenset(), *, can_answer: bool = True) -> ContractScope:
    span = request.chunk.span
    return ContractScope(
        candidates=tuple((h.table_name, h.record_id) for h in request.evidence),
        start_line=span.start_line,
        end_line=max(span.start_line, span.end_line),
        answer_required=can_answer and answer_required(request.prompt),
        extra_basis_ids=extra_basis_ids,
    )


def contract_json(request: JudgmentRequest) -> str:
    """The request's judgment contract (JSON Schema), derived from its scope when the request carries none."""
    return request.judgment_contract or json.dumps(contract_for(scope_of(request)), sort_keys=True)


def failed_judgment(
    *,
    kind: str,
    model: str,
    prompt_version: str,
    error: str,
    raw_output: str = "",
    latency_ms: float = 0.0,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    llm_calls: int = 0,
) -> Judgment:
    """A judgment that did not come about: no signal, the reason and the raw output kept."""
    return Judgment(
        signal="",
        needs_migration=False,
        confidence=0.0,
        evidence=(),
        migration_notes=(),
        explanation="",
        judge_kind=kind,
        model=model,
        prompt_version=prompt_version,
        raw_output=raw_output,
        status=JUDGMENT_FAILED,
        error=error[:4000],
        latency_ms=latency_ms,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        llm_calls=llm_calls,
    )


class RulesBackend:
    kind = "rules"
    model = RULES_JUDGE_VERSION
    prompt_version = ""  # the rules judge uses no prompt

    def __init__(self, index: RenameIndex):
        self.index = index
        self._basis_ids = index.record_ids

    async def judge(self, request: JudgmentRequest) -> Judgment:
        # Pure CPU, up to seconds on a large chunk: in a worker thread, so the service's
        # event loop keeps acking progress and answering health checks meanwhile.
        return await asyncio.to_thread(self.judge_now, request)

    def judge_now(self, request: JudgmentRequest) -> Judgment:
        started = time.perf_counter()
        judgment = judge_chunk(
            request.chunk,
            request.source_kind,
            request.evidence,
            self.index,
            request.declared_names,
            scope_from_json(request.project_symbols),
        )
        latency_ms = (time.perf_counter() - started) * 1000
        # The rules judge is held to the same contract as a model, except two
        # things only a model can do: its notes may rest on any record of the
        # rename table it knows (not only the hits), and it writes no answer to
        # an explain-type question (judge=llm routes those to the model).
        errors = validate(from_judgment(judgment), scope_of(request, self._basis_ids, can_answer=False))
        if errors:
            return failed_judgment(
                kind=self.kind,
                model=self.model,
                prompt_version=self.prompt_version,
                error="rules judgment breaks the contract: " + "; ".join(errors),
                raw_output=json.dumps(from_judgment(judgment)),
                latency_ms=latency_ms,
            )
        return replace(judgment, status=JUDGMENT_OK, latency_ms=latency_ms, route="rules")


def prompt_chunk(request: JudgmentRequest) -> PromptChunk:
    candidates = []
    for h in request.evidence:
        meta = h.metadata or {}
        enabled = meta.get("enabled") if h.table_name == "api_mapping" else None
        candidates.append(
            Candidate(
                table=h.table_name,
                record_id=h.record_id,
                title=h.title,
                content=h.content,
                before_code=str(meta.get("before_code", "") or ""),
                after_code=str(meta.get("after_code", "") or ""),
                enabled=enabled if isinstance(enabled, bool) else None,
            )
        )
    c = request.chunk
    return PromptChunk(
        prompt=request.prompt,
        intent=request.intent,
        source_kind=request.source_kind,
        chunk_kind=c.chunk_kind,
        chunk_name=c.name,
        start_line=c.span.start_line,
        end_line=max(c.span.start_line, c.span.end_line),
        code_text=c.code_text,
        surrounding_context=c.surrounding_context,
        candidates=tuple(candidates),
        answer_required=answer_required(request.prompt),
    )


class LLMBackend:
    kind = "llm"

    def __init__(self, client: ChatClient, prompts: PromptSet | None = None):
        self.client = client
        self.prompts = prompts or judge_prompts()
        self.model = client.model
        self.prompt_version = self.prompts.version

    def messages(self, request: JudgmentRequest) -> list[dict]:
        return render_messages(self.prompts, prompt_chunk(request))

    async def judge(self, request: JudgmentRequest) -> Judgment:
        scope = scope_of(request)
        schema = json.loads(contract_json(request))
        messages = self.messages(request)
        tokens_in = tokens_out = calls = 0
        latency_ms = 0.0
        raws: list[str] = []
        errors: list[str] = []
        for attempt in ("first", "repair"):
            try:
                reply = await self.client.chat(messages, schema)
            except LLMRequestError as exc:
                errors.append(f"{attempt} attempt: {exc}")
                break
            calls += 1
            tokens_in += reply.prompt_tokens
            tokens_out += reply.completion_tokens
            latency_ms += reply.latency_ms
            raws.append(reply.text)
            try:
                data = check_reply(reply.text, scope)
            except ContractViolation as violation:
                problems = list(violation.errors)
                if reply.finish_reason == "length":
                    problems.insert(0, f"the reply was cut at max_tokens={self.client.max_tokens}")
                errors.append(f"{attempt} attempt: " + "; ".join(problems))
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": render_repair(self.prompts, problems, scope.start_line, scope.end_line)},
                ]
                continue
            judgment = to_judgment(
                data, judge_kind=self.kind, model=self.model, prompt_version=self.prompt_version, raw_output=reply.text
            )
            return replace(
                judgment,
                status=JUDGMENT_OK,
                prompt_tokens=tokens_in,
                completion_tokens=tokens_out,
                llm_calls=calls,
                latency_ms=latency_ms,
                # the first attempt's violations stay visible on a repaired judgment
                error=errors[0] if attempt == "repair" else "",
            )
        raw = raws[0] if len(raws) == 1 else "\n".join(f"--- {n} attempt ---\n{r}" for n, r in zip(("first", "repair"), raws))
        return failed_judgment(
            kind=self.kind,
            model=self.model,
            prompt_version=self.prompt_version,
            error=" | ".join(errors),
            raw_output=raw,
            latency_ms=latency_ms,
            prompt_tokens=tokens_in,
            completion_tokens=tokens_out,
            llm_calls=calls,
        )


CASCADE_POLICIES = ("all", "ambiguous")


class CascadeBackend:
    """Cascade policy: "all" = every chunk to the LLM; "ambiguous" = confident rules judgments stand."""

    kind = "cascade"

    def __init__(self, rules: RulesBackend, llm: LLMBackend, policy: str = "all", threshold: float = 0.85):
        if policy not in CASCADE_POLICIES:
            raise ValueError(f"unknown cascade policy {policy!r}")
        self.rules = rules
        self.llm = llm
        self.policy = policy
        self.threshold = threshold
        self.model = llm.model
        # The outcome depends on the rules version and the threshold too, so they are part of the reuse key.
        self.prompt_version = (
            llm.prompt_version if policy == "all" else f"{llm.prompt_version}+{rules.model}+ambiguous@{threshold:g}"
        )

    def rules_stand(self, request: JudgmentRequest, judgment: Judgment) -> bool:
        if judgment.status != JUDGMENT_OK or answer_required(request.prompt):
            return False  # an explanation needs the model
        # The rules judge rates a neutral call high only when the code touches no
        # engine API at all, and facts on both sides pull confidence down, so the
        # threshold alone separates what the rules can settle from the rest.
        return judgment.confidence >= self.threshold

    async def judge(self, request: JudgmentRequest) -> Judgment:
        if self.policy == "ambiguous":
            ruled = await asyncio.to_thread(self.rules.judge_now, request)
            if self.rules_stand(request, ruled):
                return replace(ruled, route="rules_confident")
            return replace(await self.llm.judge(request), route="llm_ambiguous")
        return replace(await self.llm.judge(request), route="llm")


async def judge_once(backend: JudgeBackend, request: JudgmentRequest, *, last_attempt: bool, deliveries: int) -> Judgment:
    """The backend's judgment; server trouble on the last delivery becomes a failed judgment, not a lost chunk."""
    try:
        return await backend.judge(request)
    except LLMRequestError as exc:
        return failed_judgment(
            kind=backend.kind,
            model=backend.model,
            prompt_version=backend.prompt_version,
            error=f"the LLM server rejected the request: {exc}",
        )
    except RetryableError as exc:
        if not last_attempt:
            raise
        return failed_judgment(
            kind=backend.kind,
            model=backend.model,
            prompt_version=backend.prompt_version,
            error=f"gave up after {deliveries} deliveries: {exc}",
        )


def judgment_key(request: JudgmentRequest, backend: JudgeBackend) -> str:
    """Reuse key: (prompt, chunk, evidence, model, prompt version).

    The chunk is its text, kind, first line, the file's declared names and its
    slice of the project index (all of which change a judgment); its path is
    not, so the same code in another project reuses the judgment.
    """
    c = request.chunk
    payload = [
        request.prompt,
        request.source_kind,
        c.chunk_kind,
        c.code_text,
        c.span.start_line,
        c.span.end_line,
        c.surrounding_context,
        sorted(request.declared_names),
        request.project_symbols,
        [(h.table_name, h.record_id) for h in request.evidence],
        backend.kind,
        backend.model,
        backend.prompt_version,
    ]
    return hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()
