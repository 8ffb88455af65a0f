"""The judgment contract: what a judge returns for one chunk, and the checks that hold it to it.

The contract is a JSON Schema in a versioned file (``godot_rag/prompts/
judgment_contract.v1.json``). A judgment is valid when

1. it satisfies the schema (jsonschema, draft 2020-12);
2. every evidence record id is one of the request's retrieved candidates, in
   the candidate's own table (a judge may not cite what it was not shown);
3. every migration note's line lies inside the chunk's line span, and its
   basis record is a candidate (or empty: a change resting on syntax alone);
4. an explain-type question got an ``answer``.

Checks 2-4 depend on the request, so ``contract_for`` also writes them into a
per-request copy of the schema (candidate ids as enums, the span as
minimum/maximum) for servers that constrain generation with it; the checks
here still run on every reply, because not every server enforces every
keyword.

Pure: no I/O beyond reading the packaged schema file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import fastjsonschema
from jsonschema import Draft202012Validator

from godot_rag.domain.models import (
    SIGNALS,
    EvidenceUse,
    Judgment,
    MigrationNote,
)
from godot_rag.domain.retrieval.query import INTENT_EXPLAIN, prompt_intents
from godot_rag.errors import ContractViolation
from godot_rag.prompts import contract_schema

CONTRACT_VERSION = "judgment_contract.v1"


@dataclass(frozen=True)
class ContractScope:
    """The request-specific part of the contract."""

    candidates: tuple[tuple[str, str], ...]  # (table, record_id) of the retrieved evidence
    start_line: int
    end_line: int
    answer_required: bool = False
    # Records a migration note may rest on besides the candidates. The rules
    # judge knows the whole rename table, an LLM only what it was shown.
    extra_basis_ids: frozenset[str] = field(default_factory=frozenset)


def answer_required(prompt: str) -> bool:
    """An explain-type question (what does this do, explain...) must get an answer."""
    return INTENT_EXPLAIN in prompt_intents(prompt)


_VALIDATOR: Draft202012Validator | None = None
_FAST_CHECK: object = None

# Keywords that mean the same in draft 7 and draft 2020-12: a schema that uses
# only these may be checked by fastjsonschema (draft 7) first.
DRAFT7_SAFE_KEYWORDS = frozenset(
    {
        "$id",
        "$schema",
        "title",
        "description",
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "maxItems",
        "minItems",
    }
)


def schema_keywords(schema: object) -> set[str]:
    """Every keyword a schema uses (property names inside ``properties`` are not keywords)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            found.add(key)
            if key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    found |= schema_keywords(sub)
            elif isinstance(value, (dict, list)):
                found |= schema_keywords(value)
    elif isinstance(schema, list):
        for item in schema:
            found |= schema_keywords(item)
    return found


def _fast_check():
    """A compiled validator of the contract schema, or False when the schema needs draft 2020-12.

    Most replies are valid (the rules judge's always should be), and jsonschema
    walks the whole schema for each: fastjsonschema's generated code answers
    "valid" about 30 times faster. A reply it rejects is checked again by
    jsonschema, whose messages are the ones reported.
    """
    global _FAST_CHECK
    if _FAST_CHECK is None:
        schema = contract_schema("v1")
        if schema_keywords(schema) <= DRAFT7_SAFE_KEYWORDS:
            _FAST_CHECK = fastjsonschema.compile({**schema, "$schema": "http://json-schema.org/draft-07/schema#"})
        else:
            _FAST_CHECK = False
    return _FAST_CHECK


def schema_errors(data: object) -> list[str]:
    """The schema's complaints about ``data`` (empty = valid), in path order."""
    fast = _fast_check()
    if fast:
        try:
            fast(data)
            return []
        except fastjsonschema.JsonSchemaException:
            pass  # jsonschema says why, below
    return [
        f"{_where(e.absolute_path)}: {e.message[:200]}"
        for e in sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    ]


def _validator() -> Draft202012Validator:
    global _VALIDATOR
    if _VALIDATOR is None:
        schema = contract_schema("v1")
        Draft202012Validator.check_schema(schema)
        _VALIDATOR = Draft202012Validator(schema)
    return _VALIDATOR


def base_schema() -> dict:
    return contract_schema("v1")


def contract_for(scope: ContractScope) -> dict:
    """The schema with this request's candidates, span and answer rule written in."""
    schema = contract_schema("v1")
    props = schema["properties"]
    ids = sorted({rid for _, rid in scope.candidates})
    ev = props["evidence"]
    if ids:
        ev["items"]["properties"]["record_id"] = {"type": "string", "enum": ids}
        ev["items"]["properties"]["table"] = {"type": "string", "enum": sorted({t for t, _ in scope.candidates})}
        ev["maxItems"] = len(ids)
    else:
        ev["maxItems"] = 0
    note = props["migration_notes"]["items"]["properties"]
    note["line"] = {"type": "integer", "minimum": scope.start_line, "maximum": max(scope.start_line, scope.end_line)}
    note["basis_record_id"] = {"type": "string", "enum": ["", *ids]}
    if scope.answer_required:
        props["answer"]["minLength"] = 1
    return schema


def _where(path: Iterable[object]) -> str:
    parts = [str(p) for p in path]
    return "/".join(parts) if parts else "(root)"


def validate(data: object, scope: ContractScope) -> list[str]:
    """Every way ``data`` breaks the contract, as short sentences (empty = valid)."""
    errors = schema_errors(data)
    if not isinstance(data, dict):
        return errors or ["the reply is not a JSON object"]
    tables: dict[str, set[str]] = {}
    for table, rid in scope.candidates:
        tables.setdefault(rid, set()).add(table)
    evidence = data.get("evidence")
    if isinstance(evidence, list):
        for i, ev in enumerate(evidence):
            if not isinstance(ev, dict) or not isinstance(ev.get("record_id"), str):
                continue
            rid = ev["record_id"]
            if rid not in tables:
                errors.append(f"evidence/{i}: record_id {rid!r} is not one of the retrieved candidates")
            elif isinstance(ev.get("table"), str) and ev["table"] not in tables[rid]:
                errors.append(f"evidence/{i}: record {rid!r} is in table {sorted(tables[rid])[0]}, not {ev['table']}")
    notes = data.get("migration_notes")
    if isinstance(notes, list):
        # Membership in each, not a union: the rules judge's extra ids are the whole rename
        # table (thousands), and copying them on every judgment was a fifth of the judge's time.
        def allowed(basis: str) -> bool:
            return basis == "" or basis in tables or basis in scope.extra_basis_ids

        for i, n in enumerate(notes):
            if not isinstance(n, dict):
                continue
            line = n.get("line")
            if isinstance(line, int) and not isinstance(line, bool) and not scope.start_line <= line <= scope.end_line:
                errors.append(f"migration_notes/{i}: line {line} is outside the chunk's lines {scope.start_line}-{scope.end_line}")
            basis = n.get("basis_record_id")
            if isinstance(basis, str) and not allowed(basis):
                errors.append(f"migration_notes/{i}: basis_record_id {basis!r} is not one of the retrieved candidates")
    if scope.answer_required and isinstance(data.get("answer"), str) and not data["answer"].strip():
        errors.append("answer: the question asks for an explanation, so answer must not be empty")
    return errors


_THINK_RE = re.compile(r"<think>.*?</think>", re.S)
_FENCE_RE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.S)


def parse_reply(raw: str) -> object:
    """The JSON value in a model reply (reasoning blocks and code fences tolerated).

    Raises ContractViolation when there is none.
    """
    text = _THINK_RE.sub("", raw).strip()
    m = _FENCE_RE.match(text)
    if m:
        text = m.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as first:
        exc = first
        start = text.find("{")
        if start >= 0:
            try:
                value, _ = json.JSONDecoder().raw_decode(text[start:])
                return value
            except json.JSONDecodeError as inner:
                exc = inner
        detail = "the reply is empty" if not text else f"the reply is not a JSON object ({exc.msg} at character {exc.pos})"
        raise ContractViolation([detail]) from None


def check_reply(raw: str, scope: ContractScope) -> dict:
    """Parse and validate; the contract dict, or ContractViolation with every error."""
    data = parse_reply(raw)
    errors = validate(data, scope)
    if errors:
        raise ContractViolation(errors)
    assert isinstance(data, dict)  # validate() reports anything else
    return data


def to_judgment(data: dict, *, judge_kind: str, model: str, prompt_version: str, raw_output: str = "") -> Judgment:
    """A validated contract dict as the domain's Judgment."""
    signal = data["signal"]
    if signal not in SIGNALS:
        raise ContractViolation([f"signal: {signal!r} is not one of {list(SIGNALS)}"])
    return Judgment(
        signal=signal,
        needs_migration=bool(data["needs_migration"]),
        confidence=float(data["confidence"]),
        evidence=tuple(EvidenceUse(e["table"], e["record_id"], bool(e["relevant"]), e["why"]) for e in data["evidence"]),
        migration_notes=tuple(
            MigrationNote(int(n["line"]), n["old"], n["new"], n["basis_record_id"]) for n in data["migration_notes"]
        ),
        explanation=data["explanation"],
        judge_kind=judge_kind,
        model=model,
        prompt_version=prompt_version,
        answer=data.get("answer", ""),
        raw_output=raw_output,
    )


def from_judgment(j: Judgment) -> dict:
    """A Judgment in contract shape, so any judge's output is checked by the same rules."""
    return {
        "evidence": [{"table": e.table, "record_id": e.record_id, "relevant": e.relevant, "why": e.why[:300]} for e in j.evidence],
        "explanation": j.explanation,
        "signal": j.signal,
        "needs_migration": j.needs_migration,
        "confidence": j.confidence,
        "migration_notes": [
            {"line": n.line, "old": n.old, "new": n.new, "basis_record_id": n.basis_record_id} for n in j.migration_notes
        ],
        "answer": j.answer,
    }
