"""Judge backends behind one call: JudgmentRequest -> Judgment."""

from __future__ import annotations

import hashlib
import json
from typing import Protocol

from godot_rag import convert
from godot_rag.domain.models import Judgment
from godot_rag.domain.rules_judge import RULES_JUDGE_VERSION, RenameIndex, judge_chunk
from godot_rag.v1 import messages_pb2 as pb


class JudgeBackend(Protocol):
    model: str
    prompt_version: str

    async def judge(self, request: pb.JudgmentRequest) -> Judgment: ...


class RulesBackend:
    model = RULES_JUDGE_VERSION
    prompt_version = ""

    def __init__(self, index: RenameIndex):
        self.index = index

    async def judge(self, request: pb.JudgmentRequest) -> Judgment:
        chunk = convert.chunk_from_pb(request.chunk)
        hits = [convert.hit_from_pb(h) for h in request.retrieved_evidence]
        return judge_chunk(chunk, request.source_kind, hits, self.index, frozenset(request.declared_names))


def judgment_key(request: pb.JudgmentRequest, backend: JudgeBackend) -> str:
    """Reuse key: (prompt, chunk, evidence, model, prompt version)."""
    payload = [
        request.prompt,
        request.source_kind,
        request.chunk.code_text,
        request.chunk.span.start_line,
        sorted(request.declared_names),
        [(h.table, h.record_id) for h in request.retrieved_evidence],
        backend.model,
        backend.prompt_version,
    ]
    return hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()
