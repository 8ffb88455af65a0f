from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AnalysisRequest(_message.Message):
    __slots__ = ("analysis_id", "prompt", "project_id", "source_file", "source_kind", "source_sha256", "source_origin", "source")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    prompt: str
    project_id: str
    source_file: str
    source_kind: str
    source_sha256: str
    source_origin: str
    source: bytes
    def __init__(self, analysis_id: _Optional[str] = ..., prompt: _Optional[str] = ..., project_id: _Optional[str] = ..., source_file: _Optional[str] = ..., source_kind: _Optional[str] = ..., source_sha256: _Optional[str] = ..., source_origin: _Optional[str] = ..., source: _Optional[bytes] = ...) -> None: ...

class Span(_message.Message):
    __slots__ = ("start_line", "end_line", "start_byte", "end_byte")
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    START_BYTE_FIELD_NUMBER: _ClassVar[int]
    END_BYTE_FIELD_NUMBER: _ClassVar[int]
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    def __init__(self, start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., start_byte: _Optional[int] = ..., end_byte: _Optional[int] = ...) -> None: ...

class ChunkTrace(_message.Message):
    __slots__ = ("project_id", "source_file", "source_sha256", "chunk_id", "chunk_order", "chunk_kind")
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ORDER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_KIND_FIELD_NUMBER: _ClassVar[int]
    project_id: str
    source_file: str
    source_sha256: str
    chunk_id: str
    chunk_order: int
    chunk_kind: str
    def __init__(self, project_id: _Optional[str] = ..., source_file: _Optional[str] = ..., source_sha256: _Optional[str] = ..., chunk_id: _Optional[str] = ..., chunk_order: _Optional[int] = ..., chunk_kind: _Optional[str] = ...) -> None: ...

class Chunk(_message.Message):
    __slots__ = ("chunk_id", "chunk_order", "chunk_kind", "node_kind", "name", "span", "code_text", "symbol_candidates", "api_call_candidates", "reference_candidates", "code_mask", "surrounding_context")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ORDER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_KIND_FIELD_NUMBER: _ClassVar[int]
    NODE_KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    CODE_TEXT_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    API_CALL_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    CODE_MASK_FIELD_NUMBER: _ClassVar[int]
    SURROUNDING_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    chunk_order: int
    chunk_kind: str
    node_kind: str
    name: str
    span: Span
    code_text: str
    symbol_candidates: _containers.RepeatedScalarFieldContainer[str]
    api_call_candidates: _containers.RepeatedScalarFieldContainer[str]
    reference_candidates: _containers.RepeatedScalarFieldContainer[str]
    code_mask: str
    surrounding_context: str
    def __init__(self, chunk_id: _Optional[str] = ..., chunk_order: _Optional[int] = ..., chunk_kind: _Optional[str] = ..., node_kind: _Optional[str] = ..., name: _Optional[str] = ..., span: _Optional[_Union[Span, _Mapping]] = ..., code_text: _Optional[str] = ..., symbol_candidates: _Optional[_Iterable[str]] = ..., api_call_candidates: _Optional[_Iterable[str]] = ..., reference_candidates: _Optional[_Iterable[str]] = ..., code_mask: _Optional[str] = ..., surrounding_context: _Optional[str] = ...) -> None: ...

class SourceError(_message.Message):
    __slots__ = ("line", "column", "end_line", "end_column", "message")
    LINE_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    END_COLUMN_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    def __init__(self, line: _Optional[int] = ..., column: _Optional[int] = ..., end_line: _Optional[int] = ..., end_column: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ChunkingOutput(_message.Message):
    __slots__ = ("project_id", "source_file", "source_kind", "source_sha256", "status", "chunks", "errors", "producer_version")
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_VERSION_FIELD_NUMBER: _ClassVar[int]
    project_id: str
    source_file: str
    source_kind: str
    source_sha256: str
    status: str
    chunks: _containers.RepeatedCompositeFieldContainer[Chunk]
    errors: _containers.RepeatedCompositeFieldContainer[SourceError]
    producer_version: str
    def __init__(self, project_id: _Optional[str] = ..., source_file: _Optional[str] = ..., source_kind: _Optional[str] = ..., source_sha256: _Optional[str] = ..., status: _Optional[str] = ..., chunks: _Optional[_Iterable[_Union[Chunk, _Mapping]]] = ..., errors: _Optional[_Iterable[_Union[SourceError, _Mapping]]] = ..., producer_version: _Optional[str] = ...) -> None: ...

class RetrieverQuery(_message.Message):
    __slots__ = ("query_text", "query_terms", "raw_chunk_text", "symbol_candidates", "api_call_candidates", "reference_candidates", "prompt_terms", "intent", "direct_chunk")
    QUERY_TEXT_FIELD_NUMBER: _ClassVar[int]
    QUERY_TERMS_FIELD_NUMBER: _ClassVar[int]
    RAW_CHUNK_TEXT_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    API_CALL_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TERMS_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    DIRECT_CHUNK_FIELD_NUMBER: _ClassVar[int]
    query_text: str
    query_terms: _containers.RepeatedScalarFieldContainer[str]
    raw_chunk_text: str
    symbol_candidates: _containers.RepeatedScalarFieldContainer[str]
    api_call_candidates: _containers.RepeatedScalarFieldContainer[str]
    reference_candidates: _containers.RepeatedScalarFieldContainer[str]
    prompt_terms: _containers.RepeatedScalarFieldContainer[str]
    intent: str
    direct_chunk: bool
    def __init__(self, query_text: _Optional[str] = ..., query_terms: _Optional[_Iterable[str]] = ..., raw_chunk_text: _Optional[str] = ..., symbol_candidates: _Optional[_Iterable[str]] = ..., api_call_candidates: _Optional[_Iterable[str]] = ..., reference_candidates: _Optional[_Iterable[str]] = ..., prompt_terms: _Optional[_Iterable[str]] = ..., intent: _Optional[str] = ..., direct_chunk: _Optional[bool] = ...) -> None: ...

class RetrievalHit(_message.Message):
    __slots__ = ("table", "record_id", "title", "content", "score", "component_scores", "metadata_json")
    class ComponentScoresEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    TABLE_FIELD_NUMBER: _ClassVar[int]
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_SCORES_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    table: str
    record_id: str
    title: str
    content: str
    score: float
    component_scores: _containers.ScalarMap[str, float]
    metadata_json: str
    def __init__(self, table: _Optional[str] = ..., record_id: _Optional[str] = ..., title: _Optional[str] = ..., content: _Optional[str] = ..., score: _Optional[float] = ..., component_scores: _Optional[_Mapping[str, float]] = ..., metadata_json: _Optional[str] = ...) -> None: ...

class EvidenceUse(_message.Message):
    __slots__ = ("table", "record_id", "relevant", "why")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    RELEVANT_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    table: str
    record_id: str
    relevant: bool
    why: str
    def __init__(self, table: _Optional[str] = ..., record_id: _Optional[str] = ..., relevant: _Optional[bool] = ..., why: _Optional[str] = ...) -> None: ...

class MigrationNote(_message.Message):
    __slots__ = ("line", "old", "new", "basis_record_id")
    LINE_FIELD_NUMBER: _ClassVar[int]
    OLD_FIELD_NUMBER: _ClassVar[int]
    NEW_FIELD_NUMBER: _ClassVar[int]
    BASIS_RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    line: int
    old: str
    new: str
    basis_record_id: str
    def __init__(self, line: _Optional[int] = ..., old: _Optional[str] = ..., new: _Optional[str] = ..., basis_record_id: _Optional[str] = ...) -> None: ...

class Judgment(_message.Message):
    __slots__ = ("signal", "needs_migration", "confidence", "evidence", "migration_notes", "explanation", "judge_kind", "model", "prompt_version", "answer", "raw_output", "status", "error", "prompt_tokens", "completion_tokens", "latency_ms", "llm_calls", "route", "cached", "evidence_kinds")
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    NEEDS_MIGRATION_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    MIGRATION_NOTES_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    JUDGE_KIND_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PROMPT_VERSION_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    LLM_CALLS_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_KINDS_FIELD_NUMBER: _ClassVar[int]
    signal: str
    needs_migration: bool
    confidence: float
    evidence: _containers.RepeatedCompositeFieldContainer[EvidenceUse]
    migration_notes: _containers.RepeatedCompositeFieldContainer[MigrationNote]
    explanation: str
    judge_kind: str
    model: str
    prompt_version: str
    answer: str
    raw_output: str
    status: str
    error: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    llm_calls: int
    route: str
    cached: bool
    evidence_kinds: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, signal: _Optional[str] = ..., needs_migration: _Optional[bool] = ..., confidence: _Optional[float] = ..., evidence: _Optional[_Iterable[_Union[EvidenceUse, _Mapping]]] = ..., migration_notes: _Optional[_Iterable[_Union[MigrationNote, _Mapping]]] = ..., explanation: _Optional[str] = ..., judge_kind: _Optional[str] = ..., model: _Optional[str] = ..., prompt_version: _Optional[str] = ..., answer: _Optional[str] = ..., raw_output: _Optional[str] = ..., status: _Optional[str] = ..., error: _Optional[str] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., latency_ms: _Optional[float] = ..., llm_calls: _Optional[int] = ..., route: _Optional[str] = ..., cached: _Optional[bool] = ..., evidence_kinds: _Optional[_Iterable[str]] = ...) -> None: ...

class JudgmentRequest(_message.Message):
    __slots__ = ("prompt", "project_id", "source_file", "chunk_id", "chunk_order", "chunk_kind", "chunk_text", "surrounding_context", "retrieved_evidence", "judgment_contract", "chunk", "source_kind", "declared_names", "intent", "project_symbols")
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ORDER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_KIND_FIELD_NUMBER: _ClassVar[int]
    CHUNK_TEXT_FIELD_NUMBER: _ClassVar[int]
    SURROUNDING_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    RETRIEVED_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    JUDGMENT_CONTRACT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    DECLARED_NAMES_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    PROJECT_SYMBOLS_FIELD_NUMBER: _ClassVar[int]
    prompt: str
    project_id: str
    source_file: str
    chunk_id: str
    chunk_order: int
    chunk_kind: str
    chunk_text: str
    surrounding_context: str
    retrieved_evidence: _containers.RepeatedCompositeFieldContainer[RetrievalHit]
    judgment_contract: str
    chunk: Chunk
    source_kind: str
    declared_names: _containers.RepeatedScalarFieldContainer[str]
    intent: str
    project_symbols: str
    def __init__(self, prompt: _Optional[str] = ..., project_id: _Optional[str] = ..., source_file: _Optional[str] = ..., chunk_id: _Optional[str] = ..., chunk_order: _Optional[int] = ..., chunk_kind: _Optional[str] = ..., chunk_text: _Optional[str] = ..., surrounding_context: _Optional[str] = ..., retrieved_evidence: _Optional[_Iterable[_Union[RetrievalHit, _Mapping]]] = ..., judgment_contract: _Optional[str] = ..., chunk: _Optional[_Union[Chunk, _Mapping]] = ..., source_kind: _Optional[str] = ..., declared_names: _Optional[_Iterable[str]] = ..., intent: _Optional[str] = ..., project_symbols: _Optional[str] = ...) -> None: ...

class Verdict(_message.Message):
    __slots__ = ("label", "confidence", "counts", "basis")
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    LABEL_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    BASIS_FIELD_NUMBER: _ClassVar[int]
    label: str
    confidence: float
    counts: _containers.ScalarMap[str, int]
    basis: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, label: _Optional[str] = ..., confidence: _Optional[float] = ..., counts: _Optional[_Mapping[str, int]] = ..., basis: _Optional[_Iterable[str]] = ...) -> None: ...

class FileTask(_message.Message):
    __slots__ = ("analysis_id", "request", "source_size")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SIZE_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    request: AnalysisRequest
    source_size: int
    def __init__(self, analysis_id: _Optional[str] = ..., request: _Optional[_Union[AnalysisRequest, _Mapping]] = ..., source_size: _Optional[int] = ...) -> None: ...

class ChunkTask(_message.Message):
    __slots__ = ("analysis_id", "trace", "replay")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    REPLAY_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    trace: ChunkTrace
    replay: ReplaySpec
    def __init__(self, analysis_id: _Optional[str] = ..., trace: _Optional[_Union[ChunkTrace, _Mapping]] = ..., replay: _Optional[_Union[ReplaySpec, _Mapping]] = ...) -> None: ...

class ReplaySpec(_message.Message):
    __slots__ = ("replay_id", "from_stage", "judge", "prompt_version", "cascade", "cascade_threshold", "limit_per_table", "run", "source", "retrieval_version")
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_STAGE_FIELD_NUMBER: _ClassVar[int]
    JUDGE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_VERSION_FIELD_NUMBER: _ClassVar[int]
    CASCADE_FIELD_NUMBER: _ClassVar[int]
    CASCADE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    LIMIT_PER_TABLE_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_VERSION_FIELD_NUMBER: _ClassVar[int]
    replay_id: str
    from_stage: str
    judge: str
    prompt_version: str
    cascade: str
    cascade_threshold: float
    limit_per_table: int
    run: int
    source: str
    retrieval_version: str
    def __init__(self, replay_id: _Optional[str] = ..., from_stage: _Optional[str] = ..., judge: _Optional[str] = ..., prompt_version: _Optional[str] = ..., cascade: _Optional[str] = ..., cascade_threshold: _Optional[float] = ..., limit_per_table: _Optional[int] = ..., run: _Optional[int] = ..., source: _Optional[str] = ..., retrieval_version: _Optional[str] = ...) -> None: ...

class FileDone(_message.Message):
    __slots__ = ("analysis_id", "source_file", "status", "chunk_count")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    source_file: str
    status: str
    chunk_count: int
    def __init__(self, analysis_id: _Optional[str] = ..., source_file: _Optional[str] = ..., status: _Optional[str] = ..., chunk_count: _Optional[int] = ...) -> None: ...
