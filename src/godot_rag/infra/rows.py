"""Typed rows the store returns: one frozen dataclass per query shape.

A row type names exactly the columns its query selects. ``from_row`` builds it
from the database row and refuses one whose columns differ (a column missing
or unexpected: the query and the type are out of step), so a schema change
shows up where the row is read, not as a missing key pages later. Queries that
read a whole table select ``columns()`` of their type instead of ``*``, so a
column added by a later migration does not break them.

JSON and JSONB columns keep their Python values (dict, list). ``to_dict``
gives the fields as they are; ``to_json`` the same with datetimes as ISO 8601
text, for the JSON API and exports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self

from godot_rag.errors import RowShapeError

JsonObject = dict[str, Any]


_COLUMNS: dict[type, tuple[str, ...]] = {}
_COLUMN_SETS: dict[type, frozenset[str]] = {}


def _columns(cls: type) -> tuple[str, ...]:
    names = _COLUMNS.get(cls)
    if names is None:
        names = _COLUMNS[cls] = tuple(f.name for f in dataclasses.fields(cls))
        _COLUMN_SETS[cls] = frozenset(names)
    return names


def _column_set(cls: type) -> frozenset[str]:
    found = _COLUMN_SETS.get(cls)
    if found is None:
        _columns(cls)
        found = _COLUMN_SETS[cls]
    return found


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


class Row:
    """Base of the row types: built from a database row by column name, and read back as a dict."""

    __slots__ = ()

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The column names, in field order."""
        return _columns(cls)

    @classmethod
    def select_list(cls, alias: str = "") -> str:
        """The columns as a select list (``alias.column, ...``)."""
        prefix = f"{alias}." if alias else ""
        return ", ".join(prefix + c for c in cls.columns())

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Self:
        if row.keys() == _column_set(cls):  # one set comparison per row: the lists read thousands
            return cls(**row)
        names = cls.columns()
        missing = [n for n in names if n not in row]
        unexpected = sorted(k for k in row if k not in names)
        raise RowShapeError(
            f"{cls.__name__}: the query's columns do not match the row type"
            f" (missing: {', '.join(missing) or '-'}; unexpected: {', '.join(unexpected) or '-'})"
        )

    @classmethod
    def from_optional(cls, row: Mapping[str, Any] | None) -> Self | None:
        return None if row is None else cls.from_row(row)

    @classmethod
    def from_rows(cls, rows: list[Any]) -> list[Self]:
        return [cls.from_row(r) for r in rows]

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict, values unchanged (datetimes stay datetimes)."""
        return {name: getattr(self, name) for name in self.columns()}

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict: datetimes as ISO 8601 text."""
        return {name: _json_value(getattr(self, name)) for name in self.columns()}


# ---------------------------------------------------------------- analyses and files


@dataclass(frozen=True, slots=True)
class AnalysisRow(Row):
    """An analysis (table ``analyses``)."""

    analysis_id: str
    project_id: str
    prompt: str
    source_origin: str
    input_ref: str
    pipeline_version: str
    status: str
    files_total: int
    files_included: int
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    current_retrieval_version: str
    current_judgment_version: str


@dataclass(frozen=True, slots=True)
class KbVersionRow(Row):
    """The knowledge base the retriever searches (table ``kb_versions``, row 'current')."""

    name: str
    data_version: str
    embedding_model: str
    embedding_dim: int
    record_counts: dict[str, int]
    built_at: datetime


@dataclass(frozen=True, slots=True)
class ChunkForRetrieval(Row):
    """What the retriever checks a chunk task against: the committed chunk and its file's hash."""

    chunk_order: int
    source_file: str
    chunk: JsonObject
    file_sha256: str | None  # None: the file row is missing


@dataclass(frozen=True, slots=True)
class JudgeInputs(Row):
    """What the judge needs of one chunk (``Store.judge_inputs``): the chunk, its file's kind and slice of
    the project index, its current retrieval (None before one), the analysis's prompt and versions."""

    chunk: JsonObject
    source_file: str
    source_kind: str | None
    symbol_scope: str | None
    query: JsonObject | None
    hits: list[JsonObject] | None
    # The name of the hit list (``hit_lists``), None for a retrieval stored with its own hits: equal names, equal
    # lists, shared between the chunks' inputs and never modified.
    hits_sha256: str | None
    retrieval_version: str | None
    prompt: str
    project_id: str
    current_judgment_version: str


@dataclass(frozen=True, slots=True)
class ChunkOutcomeRow(Row):
    """One chunk as the verdict weighs it (``Store.finalize_if_complete``): where it is, how the
    aggregator settled it and what its current judgment says."""

    chunk_id: str
    source_file: str
    chunk_kind: str
    source_kind: str
    agg_status: str
    signal: str | None
    confidence: float | None
    evidence_kinds: list[str] | None


@dataclass(frozen=True, slots=True)
class AnalysisSummary(Row):
    """One analysis of the list (``Store.list_analyses``), with its verdict once there is one."""

    analysis_id: str
    project_id: str
    prompt: str
    status: str
    source_origin: str
    input_ref: str
    created_at: datetime
    finished_at: datetime | None
    files_total: int
    files_included: int
    label: str | None
    confidence: float | None


@dataclass(frozen=True, slots=True)
class FileRow(Row):
    """One file of an analysis (table ``files``; its slice of the project index is read apart)."""

    analysis_id: str
    source_file: str
    file_order: int
    source_kind: str
    included: bool
    excluded_reason: str
    sha256: str
    size: int
    status: str
    parse_status: str
    chunk_count: int
    errors: list[JsonObject]
    error: str
    chunks_reused: bool
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class FileTaskInputs:
    """What a file task reads (``Store.file_task_inputs``): the file's row, the chunking cached for its content
    and path (None: none is), and its content when nothing is cached for it (None: not stored yet)."""

    file: FileRow
    cached: JsonObject | None
    blob: bytes | None


@dataclass(frozen=True, slots=True)
class FileVersionRow(Row):
    """An analysis of the same project that lists a file, with that file's content hash."""

    analysis_id: str
    created_at: datetime
    status: str
    sha256: str
    included: bool


@dataclass(frozen=True, slots=True)
class LatestAnalysis(Row):
    analysis_id: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Progress(Row):
    """Counts of an analysis's files and chunks (``Store.progress``)."""

    files_total: int
    files_chunked: int
    chunks_total: int
    chunks_done: int
    chunks_failed: int


@dataclass(frozen=True, slots=True)
class DeadLetterRow(Row):
    id: int
    analysis_id: str
    stage: str
    subject: str
    key: str
    error: str
    deliveries: int
    created_at: datetime


# ---------------------------------------------------------------- chunks, retrievals, judgments


@dataclass(frozen=True, slots=True)
class ChunkRow(Row):
    """One chunk (table ``chunks``); ``chunk`` is the chunk document as the chunker wrote it."""

    analysis_id: str
    chunk_id: str
    source_file: str
    chunk_order: int
    chunk_kind: str
    start_line: int
    end_line: int
    chunk: JsonObject


@dataclass(frozen=True, slots=True)
class RetrievalRow(Row):
    """A chunk's retrieval: the current one (``retrievals``) or one version of it (``retrieval_versions``)."""

    analysis_id: str
    chunk_id: str
    version_id: str
    retrieval_key: str
    kb_version: str
    query: JsonObject
    hits: list[JsonObject]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class JudgmentRow(Row):
    """A chunk's current judgment and how it was made (``Store.get_judgment``)."""

    judgment: JsonObject
    judge_kind: str
    model: str
    prompt_version: str
    latency_ms: float
    judgment_key: str
    version_id: str


@dataclass(frozen=True, slots=True)
class StageRow(Row):
    """One stage of one chunk (table ``chunk_stages``, without its keys)."""

    stage: str
    status: str
    attempts: int
    last_error: str
    worker: str
    trace_id: str
    started_at: datetime | None
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ChunkResultRow(Row):
    """A chunk with its file's hash, per-stage state, current retrieval and judgment (``Store.list_chunk_results``).

    ``stages`` maps a stage to {status, attempts, last_error, trace_id, worker}.
    """

    chunk_id: str
    source_file: str
    chunk_order: int
    chunk_kind: str
    start_line: int
    end_line: int
    chunk: JsonObject
    sha256: str
    project_id: str
    stages: dict[str, JsonObject] | None
    query: JsonObject | None
    hits: list[JsonObject] | None
    judgment: JsonObject | None


@dataclass(frozen=True, slots=True)
class ChunkPlace(Row):
    """A chunk's place in its analysis and its aggregate status (``Store.chunk_places``)."""

    chunk_id: str
    source_file: str
    chunk_order: int
    chunk_kind: str
    start_line: int
    end_line: int
    source_kind: str
    agg_status: str


@dataclass(frozen=True, slots=True)
class ChunkTaskRow(Row):
    """The trace fields of a chunk, to rebuild its stage message (``Store.chunk_task_rows``)."""

    chunk_id: str
    source_file: str
    chunk_order: int
    chunk_kind: str
    sha256: str
    project_id: str


# ---------------------------------------------------------------- versions and verdicts


@dataclass(frozen=True, slots=True)
class VerdictRow(Row):
    """The verdict of an analysis (``verdicts``) or of one of its judgment versions (``verdict_versions``)."""

    analysis_id: str
    label: str
    confidence: float
    counts: dict[str, int]
    basis: list[Any]
    computed_at: datetime


@dataclass(frozen=True, slots=True)
class ResultVersionRow(Row):
    """A result version of an analysis and, for a judgment version with one stored, its verdict."""

    analysis_id: str
    version_id: str
    stage: str
    config: JsonObject
    base_version: str
    replay_id: str
    created_at: datetime
    label: str | None
    confidence: float | None
    counts: dict[str, int] | None
    basis: list[Any] | None


@dataclass(frozen=True, slots=True)
class JudgmentVersionRow(Row):
    """A chunk's judgment in one version, with the query and hits of the retrieval it judged."""

    chunk_id: str
    version_id: str
    retrieval_version: str
    judgment: JsonObject
    created_at: datetime
    hits: list[JsonObject] | None
    query: JsonObject | None
    kb_version: str | None


# ---------------------------------------------------------------- replays


@dataclass(frozen=True, slots=True)
class ReplayRow(Row):
    """A replay (table ``replays``)."""

    replay_id: str
    analysis_id: str
    from_stage: str
    config: JsonObject
    base_version: str
    judgment_version: str
    run: int
    status: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class ReplayChunkRow(Row):
    """One stage of one chunk of a replay (table ``replay_chunks``)."""

    replay_id: str
    analysis_id: str
    chunk_id: str
    stage: str
    status: str
    source: str
    result_version: str
    attempts: int
    last_error: str
    worker: str
    trace_id: str
    started_at: datetime | None
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ReplayChunkStageRow(ReplayChunkRow):
    """A replay's stage row of a chunk, with the stage the replay started from."""

    from_stage: str


@dataclass(frozen=True, slots=True)
class StartedReplay:
    """What ``Store.start_replay`` recorded: the replay row, and the chunks this replay already settled."""

    replay: ReplayRow
    settled: list[str]


# ---------------------------------------------------------------- knowledge base


@dataclass(frozen=True, slots=True)
class KbRecordMatch(Row):
    """A knowledge record found by id or title (``Store.find_records``)."""

    table_name: str
    id: str
    title: str


# ---------------------------------------------------------------- web screen


@dataclass(frozen=True, slots=True)
class WebChunkRow(Row):
    """One chunk of the live list (``Store.web_chunk_rows``).

    ``stages`` maps a stage to {status, attempts, last_error}; ``changed_at`` is its latest stage update.
    The judgment columns are None while the chunk has no judgment.
    """

    chunk_id: str
    source_file: str
    chunk_order: int
    chunk_kind: str
    start_line: int
    end_line: int
    name: str
    source_kind: str
    file_order: int
    stages: dict[str, JsonObject] | None
    changed_at: datetime | None
    signal: str | None
    needs_migration: bool | None
    confidence: float | None
    judgment_status: str | None
    migration_notes: list[JsonObject]


@dataclass(frozen=True, slots=True)
class WebTiming(Row):
    """Chunks finished in all and lately, with the database's clock (``Store.web_timing``)."""

    done: int
    recent: int
    first_done: datetime | None
    last_done: datetime | None
    now: datetime
    created_at: datetime | None
    cursor: datetime | None


@dataclass(frozen=True, slots=True)
class WebFileChunkRow(Row):
    """One chunk of a file page: the chunk, its stage rows, retrieval and judgment with its accounting.

    ``stages`` is a list of stage rows (as StageRow's fields, timestamps as text); the retrieval and
    judgment columns are None while the chunk has none.
    """

    chunk_id: str
    chunk_order: int
    start_line: int
    end_line: int
    chunk: JsonObject
    stages: list[JsonObject] | None
    query: JsonObject | None
    hits: list[JsonObject] | None
    kb_version: str | None
    judgment: JsonObject | None
    judge_kind: str | None
    model: str | None
    prompt_version: str | None
    latency_ms: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    llm_calls: int | None
    route: str | None
    cached: bool | None
    judgment_status: str | None
    judgment_error: str | None


# Every row type, for the test that checks each against the columns its query selects.
ROW_TYPES: tuple[type[Row], ...] = (
    AnalysisRow,
    KbVersionRow,
    ChunkForRetrieval,
    JudgeInputs,
    ChunkOutcomeRow,
    AnalysisSummary,
    FileRow,
    FileVersionRow,
    LatestAnalysis,
    Progress,
    DeadLetterRow,
    ChunkRow,
    RetrievalRow,
    JudgmentRow,
    StageRow,
    ChunkResultRow,
    ChunkPlace,
    ChunkTaskRow,
    VerdictRow,
    ResultVersionRow,
    JudgmentVersionRow,
    ReplayRow,
    ReplayChunkRow,
    ReplayChunkStageRow,
    KbRecordMatch,
    WebChunkRow,
    WebTiming,
    WebFileChunkRow,
)
