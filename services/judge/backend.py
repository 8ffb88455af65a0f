"""Judge backends behind one call: JudgmentRequest -> Judgment (protobuf, with its accounting).

- RulesBackend: the offline rules judge (deterministic, no model).
- LLMBackend: an OpenAI-compatible server (vLLM, llama.cpp) with the versioned
  prompt and the judgment contract; one repair attempt, then a failed
  judgment that keeps the raw output.
- CascadeBackend: judge_cascade policy over the two ("all" sends every chunk
  to the LLM, "ambiguous" lets confident rules judgments stand).

Every backend checks its output against the judgment contract, so a judgment
that reaches the store is valid or visibly failed.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Protocol

from godot_rag import convert
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
from godot_rag.infra.llm_client import LLMClient, LLMRequestError
from godot_rag.prompts import Candidate, PromptChunk, PromptSet, judge_prompts, render_messages, render_repair
from godot_rag.v1 import messages_pb2 as pb

STATUS_OK = "ok"
STATUS_FAILED = "failed"


class JudgeBackend(Protocol):
    kind: str  # rules | llm | cascade
    model: str
    prompt_version: str

    async def judge(self, request: pb.JudgmentRequest) -> pb.Judgment: ...


def scope_of(request: pb.JudgmentRequest, extra_basis_ids: frozenset[str] = frozenset(), *, can_answer: bool = True) -> ContractScope:
    span = request.chunk.span
    return ContractScope(
        candidates=tuple((h.table, h.record_id) for h in request.retrieved_evidence),
        start_line=span.start_line,
        end_line=max(span.start_line, span.end_line),
        answer_required=can_answer and answer_required(request.prompt),
        extra_basis_ids=extra_basis_ids,
    )


def failed_judgment(*, kind: str, model: str, prompt_version: str, error: str, raw_output: str = "",
                    latency_ms: float = 0.0, prompt_tokens: int = 0, completion_tokens: int = 0, llm_calls: int = 0) -> pb.Judgment:
    """A judgment that did not come about: no signal, the reason and the raw output kept."""
    return pb.Judgment(
        signal="", confidence=0.0, explanation="", judge_kind=kind, model=model, prompt_version=prompt_version,
        raw_output=raw_output, status=STATUS_FAILED, error=error[:4000], latency_ms=latency_ms,
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, llm_calls=llm_calls,
    )


class RulesBackend:
    kind = "rules"
    model = RULES_JUDGE_VERSION
    prompt_version = ""  # the rules judge uses no prompt

    def __init__(self, index: RenameIndex):
        self.index = index
        self._basis_ids = index.record_ids

    async def judge(self, request: pb.JudgmentRequest) -> pb.Judgment:
        return self.judge_now(request)

    def judge_now(self, request: pb.JudgmentRequest) -> pb.Judgment:
        started = time.perf_counter()
        chunk = convert.chunk_from_pb(request.chunk)
        hits = [convert.hit_from_pb(h) for h in request.retrieved_evidence]
        judgment = judge_chunk(chunk, request.source_kind, hits, self.index, frozenset(request.declared_names),
                               scope_from_json(request.project_symbols))
        latency_ms = (time.perf_counter() - started) * 1000
        # The rules judge is held to the same contract as a model, except two
        # things only a model can do: its notes may rest on any record of the
        # rename table it knows (not only the hits), and it writes no answer to
        # an explain-type question (judge=llm routes those to the model).
        errors = validate(from_judgment(judgment), scope_of(request, self._basis_ids, can_answer=False))
        if errors:
            return failed_judgment(kind=self.kind, model=self.model, prompt_version=self.prompt_version,
                                   error="rules judgment breaks the contract: " + "; ".join(errors),
                                   raw_output=json.dumps(from_judgment(judgment)), latency_ms=latency_ms)
        out = convert.judgment_to_pb(judgment)
        out.status = STATUS_OK
        out.latency_ms = latency_ms
        out.route = "rules"
        return out


def prompt_chunk(request: pb.JudgmentRequest) -> PromptChunk:
    candidates = []
    for h in request.retrieved_evidence:
        meta = json.loads(h.metadata_json) if h.metadata_json else {}
        enabled = meta.get("enabled") if h.table == "api_mapping" else None
        candidates.append(Candidate(
            table=h.table, record_id=h.record_id, title=h.title, content=h.content,
            before_code=str(meta.get("before_code", "") or ""), after_code=str(meta.get("after_code", "") or ""),
            enabled=enabled if isinstance(enabled, bool) else None,
        ))
    span = request.chunk.span
    return PromptChunk(
        prompt=request.prompt, intent=request.intent, source_kind=request.source_kind, chunk_kind=request.chunk_kind or request.chunk.chunk_kind,
        chunk_name=request.chunk.name, start_line=span.start_line, end_line=max(span.start_line, span.end_line),
        code_text=request.chunk.code_text or request.chunk_text, surrounding_context=request.surrounding_context or request.chunk.surrounding_context,
        candidates=tuple(candidates), answer_required=answer_required(request.prompt),
    )


class LLMBackend:
    kind = "llm"

    def __init__(self, client: LLMClient, prompts: PromptSet | None = None):
        self.client = client
        self.prompts = prompts or judge_prompts()
        self.model = client.model
        self.prompt_version = self.prompts.version

    def messages(self, request: pb.JudgmentRequest) -> list[dict]:
        return render_messages(self.prompts, prompt_chunk(request))

    async def judge(self, request: pb.JudgmentRequest) -> pb.Judgment:
        scope = scope_of(request)
        schema = json.loads(request.judgment_contract) if request.judgment_contract else contract_for(scope)
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
                messages = [*messages, {"role": "assistant", "content": reply.text},
                            {"role": "user", "content": render_repair(self.prompts, problems, scope.start_line, scope.end_line)}]
                continue
            judgment = to_judgment(data, judge_kind=self.kind, model=self.model, prompt_version=self.prompt_version,
                                   raw_output=reply.text)
            out = convert.judgment_to_pb(judgment)
            out.status = STATUS_OK
            out.prompt_tokens, out.completion_tokens, out.llm_calls, out.latency_ms = tokens_in, tokens_out, calls, latency_ms
            if attempt == "repair":
                out.error = errors[0]  # the first attempt's violations stay visible on a repaired judgment
            return out
        raw = raws[0] if len(raws) == 1 else "\n".join(f"--- {n} attempt ---\n{r}" for n, r in zip(("first", "repair"), raws))
        return failed_judgment(kind=self.kind, model=self.model, prompt_version=self.prompt_version, error=" | ".join(errors),
                               raw_output=raw, latency_ms=latency_ms, prompt_tokens=tokens_in, completion_tokens=tokens_out,
                               llm_calls=calls)


class CascadeBackend:
    """judge_cascade: "all" = every chunk to the LLM; "ambiguous" = confident rules judgments stand."""

    kind = "cascade"

    def __init__(self, rules: RulesBackend, llm: LLMBackend, policy: str = "all", threshold: float = 0.85):
        if policy not in ("all", "ambiguous"):
            raise ValueError(f"unknown cascade policy {policy!r}")
        self.rules = rules
        self.llm = llm
        self.policy = policy
        self.threshold = threshold
        self.model = llm.model
        # The outcome depends on the rules version and the threshold too, so they are part of the reuse key.
        self.prompt_version = llm.prompt_version if policy == "all" else \
            f"{llm.prompt_version}+{rules.model}+ambiguous@{threshold:g}"

    def rules_stand(self, request: pb.JudgmentRequest, judgment: pb.Judgment) -> bool:
        if judgment.status != STATUS_OK or answer_required(request.prompt):
            return False  # an explanation needs the model
        # The rules judge rates a neutral call high only when the code touches no
        # engine API at all, and facts on both sides pull confidence down, so the
        # threshold alone separates what the rules can settle from the rest.
        return judgment.confidence >= self.threshold

    async def judge(self, request: pb.JudgmentRequest) -> pb.Judgment:
        if self.policy == "ambiguous":
            ruled = self.rules.judge_now(request)
            if self.rules_stand(request, ruled):
                ruled.route = "rules_confident"
                return ruled
            out = await self.llm.judge(request)
            out.route = "llm_ambiguous"
            return out
        out = await self.llm.judge(request)
        out.route = "llm"
        return out


def judgment_key(request: pb.JudgmentRequest, backend: JudgeBackend) -> str:
    """Reuse key: (prompt, chunk, evidence, model, prompt version).

    The chunk is its text, kind, first line, the file's declared names and its
    slice of the project index (all of which change a judgment); its path is
    not, so the same code in another project reuses the judgment.
    """
    payload = [
        request.prompt,
        request.source_kind,
        request.chunk.chunk_kind,
        request.chunk.code_text,
        request.chunk.span.start_line,
        request.chunk.span.end_line,
        request.surrounding_context,
        sorted(request.declared_names),
        request.project_symbols,
        [(h.table, h.record_id) for h in request.retrieved_evidence],
        backend.kind,
        backend.model,
        backend.prompt_version,
    ]
    return hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()
