"""Pure data contracts of the domain package.

These dataclasses are what the domain functions take and return. The wire
format between services is the protobuf in ``protos/godot_rag/v1``; the
conversion lives in ``godot_rag.convert`` so that no domain module imports
generated code or any I/O library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum


class SourceKind(StrEnum):
    """What an included file is, which decides the chunker that cuts it."""

    GDSCRIPT = "gdscript"  # .gd: the GDScript AST chunker
    SCENE = "scene"  # .tscn, .escn
    RESOURCE = "resource"  # .tres
    PROJECT_CONFIG = "project_config"  # project.godot
    IMPORT_META = "import_meta"  # .import
    UID = "uid"  # .uid
    CONFIG = "config"  # .cfg and other ini-like files
    IGNORE = "ignore"  # .gitignore, .gdignore, .gitattributes
    SHADER = "shader"  # cut as text blocks
    TEXT = "text"  # any other included text


# Status values shared by parser and direct chunker output.
PARSE_OK = "ok"
PARSE_PARTIAL = "partial"  # syntax errors: chunks for what parsed, errors listed
PARSE_EMPTY = "empty"  # no non-blank line
PARSE_FAILED = "failed"  # nothing usable (invalid UTF-8, NUL bytes, over the size limit)


# Span and Chunk are slots classes: a file can have thousands of chunks.
@dataclass(frozen=True, slots=True)
class Span:
    """1-based inclusive line range plus the UTF-8 byte range of the chunk.

    Invariant: ``source_bytes[start_byte:end_byte].decode() == code_text``.
    """

    start_line: int
    end_line: int
    start_byte: int
    end_byte: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """One traceable piece of a file: an AST chunk (.gd) or a direct chunk."""

    chunk_id: str  # deterministic, unique within the file: "player.gd:function:_process"
    chunk_order: int  # 1-based, strictly increasing within the file
    chunk_kind: str  # class_extends, signal, variable, function, ... / header, node, section, ...
    node_kind: str  # the syntax node type(s) the chunk was cut from
    name: str
    span: Span
    code_text: str
    # Candidates are extracted from code only: never from comments or strings.
    symbol_candidates: tuple[str, ...] = ()
    api_call_candidates: tuple[str, ...] = ()
    reference_candidates: tuple[str, ...] = ()
    # code_text with comment and string bodies blanked by spaces (same length,
    # same line breaks): a judge matching a symbol against it matches code only.
    code_mask: str = ""
    surrounding_context: str = ""


@dataclass(frozen=True)
class SourceError:
    """A problem found in a source file; line/column are 1-based."""

    line: int
    column: int
    end_line: int
    end_column: int
    message: str


@dataclass(frozen=True, slots=True)
class ChunkingResult:
    """Output of the parser (ast_parse_output) or direct chunker (direct_chunk_output)."""

    source_file: str
    source_kind: str
    source_sha256: str
    status: str  # PARSE_OK | PARSE_PARTIAL | PARSE_EMPTY | PARSE_FAILED
    chunks: tuple[Chunk, ...]
    errors: tuple[SourceError, ...] = ()
    producer_version: str = ""


@dataclass(frozen=True)
class ChunkTrace:
    """Tracking only (UI, logs, resume). Never a search criterion."""

    project_id: str
    source_file: str
    source_sha256: str
    chunk_id: str
    chunk_order: int
    chunk_kind: str


@dataclass(frozen=True)
class RetrieverQuery:
    """All the retriever sees. No path, chunk id or order may enter it."""

    query_text: str
    query_terms: tuple[str, ...]
    raw_chunk_text: str
    symbol_candidates: tuple[str, ...] = ()
    api_call_candidates: tuple[str, ...] = ()
    reference_candidates: tuple[str, ...] = ()
    prompt_terms: tuple[str, ...] = ()
    intent: str = "version_check"
    # A chunk of a scene, resource, import or project file: searched by its candidates alone,
    # without the query vector (``godot_rag.domain.retrieval.fusion.searches_vectors``).
    direct_chunk: bool = False


def encode_metadata(metadata: dict) -> str:
    """A hit's metadata as the API writes it (``metadata_json``): keys sorted, anything else as text."""
    return json.dumps(metadata, sort_keys=True, default=str)


@dataclass(frozen=True)
class RetrievalHit:
    table_name: str
    record_id: str
    score: float
    title: str
    content: str
    metadata: dict = field(default_factory=dict)
    component_scores: dict = field(default_factory=dict)
    # ``metadata`` as the API writes it (sorted keys), when the record's reader encoded it once already:
    # a record is found by many chunks, and its metadata is most of a stored hit.
    metadata_json: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class MigrationNote:
    line: int  # 1-based file line
    old: str
    new: str
    basis_record_id: str


@dataclass(frozen=True)
class EvidenceUse:
    table: str
    record_id: str
    relevant: bool
    why: str


SIGNAL_GODOT3 = "godot3"
SIGNAL_GODOT4 = "godot4"
SIGNAL_NEUTRAL = "neutral"
SIGNALS = (SIGNAL_GODOT3, SIGNAL_GODOT4, SIGNAL_NEUTRAL)


@dataclass(frozen=True)
class Judgment:
    signal: str  # one of SIGNALS
    needs_migration: bool
    confidence: float  # 0..1
    evidence: tuple[EvidenceUse, ...]
    migration_notes: tuple[MigrationNote, ...]
    explanation: str
    judge_kind: str  # "rules" | "llm"
    model: str
    prompt_version: str
    answer: str = ""
    raw_output: str = ""
    # "side:kind" pairs present among the facts (see judging.rules.EVIDENCE_KINDS);
    # empty when the judge does not say (a model).
    evidence_kinds: tuple[str, ...] = ()
    # Accounting: how the judgment came about.
    status: str = "ok"  # JUDGMENT_OK | JUDGMENT_FAILED
    error: str = ""  # why a failed judgment failed; on a repaired one, the first attempt's violations
    prompt_tokens: int = 0  # summed over the attempts (first + repair)
    completion_tokens: int = 0
    latency_ms: float = 0.0
    llm_calls: int = 0
    route: str = ""  # rules | llm | rules_confident | llm_ambiguous
    cached: bool = False  # reused by its judgment key: no judge call in this analysis


JUDGMENT_OK = "ok"
JUDGMENT_FAILED = "failed"


@dataclass(frozen=True)
class JudgmentRequest:
    """What a judge sees of one chunk: the chunk, its evidence and the question (llm_judgment_request)."""

    prompt: str
    chunk: Chunk
    evidence: tuple[RetrievalHit, ...]
    source_kind: str = ""
    intent: str = ""  # the prompt's primary intent (version_check, migration, explain)
    # Functions and members the chunk's file declares: a call of one of them is
    # the project's own method, not an engine API that shares its name.
    declared_names: frozenset[str] = frozenset()
    judgment_contract: str = ""  # JSON Schema the answer must satisfy; empty = derived from the request
    # The file's slice of the project index (JSON of judging.project_index.FileScope): what its
    # receivers resolve to. Empty when the analysis has none.
    project_symbols: str = ""
    # Tracking only (shown, logged); never part of what decides a judgment.
    project_id: str = ""
    source_file: str = ""


VERDICT_GODOT3 = "godot3"
VERDICT_GODOT4 = "godot4"
VERDICT_MIXED = "mixed"
VERDICT_UNDETERMINED = "undetermined"


@dataclass(frozen=True)
class Verdict:
    label: str
    confidence: float
    counts: dict  # {"godot3": n, "godot4": n, "neutral": n, "failed": n, "total": n}
    basis: tuple[str, ...] = ()  # human-readable reasons, strongest first
