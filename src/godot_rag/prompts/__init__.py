"""Versioned prompt files of the judge, and how a request is written into them.

One prompt version names one set of files (``judge.<v>.system.md``,
``judge.<v>.user.md``, ``judge.<v>.repair.md``) and the contract file it
promises (``judgment_contract.<v>.json``). A change to any of them is a new
version: the version is part of the judgment reuse key, so a cached judgment
never outlives the words that produced it.

Message layout follows vLLM's prefix cache: the system message is the same for
every chunk (instructions, version cues, output shape), and everything that
differs per chunk comes last, in the user message.

Untrusted text (the code, its name, its surrounding context, retrieved record
text) is fenced as data. The fence id is derived from the fenced text itself, so text
inside a fence cannot contain its own closing line and so cannot break out.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

# judge.v2: the chunk's name (a scene node's name can hold anything, newlines included) is fenced
# as data like the code; judge.v1 wrote it into the instructions' own line.
JUDGE_PROMPT_VERSION = "judge.v2"
# The judgment contract each prompt version promises.
_CONTRACT_OF = {"judge.v1": "v1", "judge.v2": "v1"}

# Per-field limits keep a prompt inside a small model's context (SmolLM2: 8k
# tokens) and stop one huge chunk from crowding out the evidence.
MAX_CHUNK_CHARS = 12_000
MAX_CONTEXT_CHARS = 1_500
MAX_CANDIDATE_CHARS = 400


@dataclass(frozen=True)
class PromptSet:
    version: str  # "judge.v1"
    system: str
    user: str
    repair: str
    contract: dict  # the JSON Schema of the judgment contract


@dataclass(frozen=True)
class Candidate:
    """A retrieved record as the judge is shown it."""

    table: str
    record_id: str
    title: str
    content: str
    before_code: str = ""
    after_code: str = ""
    enabled: bool | None = None  # api_mapping: False = a disabled (false-rename trap) pair


@dataclass(frozen=True)
class PromptChunk:
    """Everything chunk-specific that enters the user message."""

    prompt: str
    intent: str
    source_kind: str
    chunk_kind: str
    chunk_name: str
    start_line: int
    end_line: int
    code_text: str
    surrounding_context: str
    candidates: Sequence[Candidate]
    answer_required: bool = False


def read_text(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=4)
def _contract(version: str) -> str:
    return read_text(f"judgment_contract.{version}.json")


def contract_schema(version: str = "v1") -> dict:
    """A fresh copy of the contract's JSON Schema (callers may specialise it)."""
    return copy.deepcopy(json.loads(_contract(version)))


@lru_cache(maxsize=4)
def judge_prompts(version: str = JUDGE_PROMPT_VERSION) -> PromptSet:
    stem = version  # "judge.v2"
    v = _CONTRACT_OF.get(version, version.rsplit(".", 1)[-1])
    return PromptSet(
        version=version,
        system=read_text(f"{stem}.system.md").strip(),
        user=read_text(f"{stem}.user.md").strip(),
        repair=read_text(f"{stem}.repair.md").strip(),
        contract=json.loads(_contract(v)),
    )


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def fill(template: str, values: dict[str, object]) -> str:
    """Replace ``{{name}}`` placeholders in one pass.

    One pass matters: a value that itself contains ``{{...}}`` (code can) is
    inserted verbatim and never expanded.
    """

    def sub(m: re.Match[str]) -> str:
        return str(values[m.group(1)])

    return _PLACEHOLDER.sub(sub, template)


def fence_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def fence(name: str, text: str) -> str:
    fid = fence_id(text)
    return f'<data name="{name}" id="{fid}">\n{text}\n</data id="{fid}">'


def numbered(code_text: str, start_line: int) -> str:
    lines = code_text.split("\n")
    width = len(str(start_line + len(lines) - 1))
    return "\n".join(f"{start_line + i:>{width}} | {line}" for i, line in enumerate(lines))


def _clip(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {what} cut at {limit} of {len(text)} characters]"


def _candidate_text(c: Candidate) -> str:
    parts = [f"[{c.table}] record_id={c.record_id}", f"title: {c.title}"]
    if c.enabled is False:
        parts.append("disabled pair: the converter does not apply it (a known false-rename trap); never evidence on its own")
    if c.content:
        parts.append("text: " + _clip(" ".join(c.content.split()), MAX_CANDIDATE_CHARS, "text"))
    if c.before_code or c.after_code:
        parts.append(f"before: {c.before_code}")
        parts.append(f"after: {c.after_code}")
    return "\n".join(parts)


def render_messages(ps: PromptSet, c: PromptChunk) -> list[dict[str, str]]:
    """The chat messages of a first judgment attempt."""
    code = numbered(_clip(c.code_text, MAX_CHUNK_CHARS, "chunk"), c.start_line)
    context = _clip(c.surrounding_context, MAX_CONTEXT_CHARS, "context") if c.surrounding_context.strip() else "(none)"
    if c.candidates:
        evidence = "\n\n".join(fence("candidate", _candidate_text(x)) for x in c.candidates)
    else:
        evidence = "(no candidates: evidence must be an empty list and basis_record_id empty)"
    user = fill(
        ps.user,
        {
            "prompt": " ".join(c.prompt.split()) or "(none)",
            "intent": c.intent or "version_check",
            "chunk_kind": c.chunk_kind,
            # Everything from the project is fenced: a node name is the project's text too.
            "chunk_name": fence("chunk_name", c.chunk_name or "-"),
            "source_kind": c.source_kind or "text",
            "start_line": c.start_line,
            "end_line": c.end_line,
            "surrounding_context": fence("context", context),
            "chunk": fence("chunk", code),
            "candidate_count": len(c.candidates),
            "evidence": evidence,
            "answer_rule": " The question asks for an explanation: put it in answer." if c.answer_required else "",
        },
    )
    return [{"role": "system", "content": ps.system}, {"role": "user", "content": user}]


def render_repair(ps: PromptSet, errors: Sequence[str], start_line: int, end_line: int) -> str:
    listed = "\n".join(f"- {e}" for e in errors[:12])
    return fill(ps.repair, {"errors": listed, "start_line": start_line, "end_line": end_line})
