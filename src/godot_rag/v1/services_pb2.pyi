from godot_rag.v1 import messages_pb2 as _messages_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ParseRequest(_message.Message):
    __slots__ = ("project_id", "source_file", "source_kind", "source_text", "source_sha256")
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    project_id: str
    source_file: str
    source_kind: str
    source_text: bytes
    source_sha256: str
    def __init__(self, project_id: _Optional[str] = ..., source_file: _Optional[str] = ..., source_kind: _Optional[str] = ..., source_text: _Optional[bytes] = ..., source_sha256: _Optional[str] = ...) -> None: ...

class ChunkRequest(_message.Message):
    __slots__ = ("project_id", "source_file", "source_kind", "source_text", "source_sha256")
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    project_id: str
    source_file: str
    source_kind: str
    source_text: bytes
    source_sha256: str
    def __init__(self, project_id: _Optional[str] = ..., source_file: _Optional[str] = ..., source_kind: _Optional[str] = ..., source_text: _Optional[bytes] = ..., source_sha256: _Optional[str] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("query", "limit_per_table")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_PER_TABLE_FIELD_NUMBER: _ClassVar[int]
    query: _messages_pb2.RetrieverQuery
    limit_per_table: int
    def __init__(self, query: _Optional[_Union[_messages_pb2.RetrieverQuery, _Mapping]] = ..., limit_per_table: _Optional[int] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("hits", "kb_version")
    HITS_FIELD_NUMBER: _ClassVar[int]
    KB_VERSION_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[_messages_pb2.RetrievalHit]
    kb_version: str
    def __init__(self, hits: _Optional[_Iterable[_Union[_messages_pb2.RetrievalHit, _Mapping]]] = ..., kb_version: _Optional[str] = ...) -> None: ...

class BuildQueryRequest(_message.Message):
    __slots__ = ("prompt", "chunk")
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    prompt: str
    chunk: _messages_pb2.Chunk
    def __init__(self, prompt: _Optional[str] = ..., chunk: _Optional[_Union[_messages_pb2.Chunk, _Mapping]] = ...) -> None: ...

class VerdictRequest(_message.Message):
    __slots__ = ("analysis_id",)
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    def __init__(self, analysis_id: _Optional[str] = ...) -> None: ...

class ListChunksRequest(_message.Message):
    __slots__ = ("analysis_id", "source_file")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    source_file: str
    def __init__(self, analysis_id: _Optional[str] = ..., source_file: _Optional[str] = ...) -> None: ...

class ChunkStatus(_message.Message):
    __slots__ = ("trace", "span", "status", "stage", "judgment", "last_error")
    TRACE_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    JUDGMENT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    trace: _messages_pb2.ChunkTrace
    span: _messages_pb2.Span
    status: str
    stage: str
    judgment: _messages_pb2.Judgment
    last_error: str
    def __init__(self, trace: _Optional[_Union[_messages_pb2.ChunkTrace, _Mapping]] = ..., span: _Optional[_Union[_messages_pb2.Span, _Mapping]] = ..., status: _Optional[str] = ..., stage: _Optional[str] = ..., judgment: _Optional[_Union[_messages_pb2.Judgment, _Mapping]] = ..., last_error: _Optional[str] = ...) -> None: ...

class ListChunksResponse(_message.Message):
    __slots__ = ("chunks",)
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    chunks: _containers.RepeatedCompositeFieldContainer[ChunkStatus]
    def __init__(self, chunks: _Optional[_Iterable[_Union[ChunkStatus, _Mapping]]] = ...) -> None: ...

class SubmitRequest(_message.Message):
    __slots__ = ("prompt", "path", "expanded_text", "snippet", "git_url", "archive", "snippet_kind", "project_id", "git_ref", "archive_name")
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    EXPANDED_TEXT_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    GIT_URL_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_KIND_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    GIT_REF_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_NAME_FIELD_NUMBER: _ClassVar[int]
    prompt: str
    path: str
    expanded_text: str
    snippet: str
    git_url: str
    archive: bytes
    snippet_kind: str
    project_id: str
    git_ref: str
    archive_name: str
    def __init__(self, prompt: _Optional[str] = ..., path: _Optional[str] = ..., expanded_text: _Optional[str] = ..., snippet: _Optional[str] = ..., git_url: _Optional[str] = ..., archive: _Optional[bytes] = ..., snippet_kind: _Optional[str] = ..., project_id: _Optional[str] = ..., git_ref: _Optional[str] = ..., archive_name: _Optional[str] = ...) -> None: ...

class SubmittedProject(_message.Message):
    __slots__ = ("analysis_id", "project_id", "project_root", "files_included", "files_excluded", "created")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ROOT_FIELD_NUMBER: _ClassVar[int]
    FILES_INCLUDED_FIELD_NUMBER: _ClassVar[int]
    FILES_EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    project_id: str
    project_root: str
    files_included: int
    files_excluded: int
    created: bool
    def __init__(self, analysis_id: _Optional[str] = ..., project_id: _Optional[str] = ..., project_root: _Optional[str] = ..., files_included: _Optional[int] = ..., files_excluded: _Optional[int] = ..., created: _Optional[bool] = ...) -> None: ...

class SubmitResponse(_message.Message):
    __slots__ = ("analysis_id", "project_id", "files_included", "files_excluded", "projects", "source_origin", "input_ref")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    FILES_INCLUDED_FIELD_NUMBER: _ClassVar[int]
    FILES_EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    PROJECTS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    INPUT_REF_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    project_id: str
    files_included: int
    files_excluded: int
    projects: _containers.RepeatedCompositeFieldContainer[SubmittedProject]
    source_origin: str
    input_ref: str
    def __init__(self, analysis_id: _Optional[str] = ..., project_id: _Optional[str] = ..., files_included: _Optional[int] = ..., files_excluded: _Optional[int] = ..., projects: _Optional[_Iterable[_Union[SubmittedProject, _Mapping]]] = ..., source_origin: _Optional[str] = ..., input_ref: _Optional[str] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("analysis_id",)
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    def __init__(self, analysis_id: _Optional[str] = ...) -> None: ...

class FileResult(_message.Message):
    __slots__ = ("source_file", "source_kind", "status", "excluded_reason", "source_sha256", "chunk_count", "errors", "error")
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_REASON_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    source_file: str
    source_kind: str
    status: str
    excluded_reason: str
    source_sha256: str
    chunk_count: int
    errors: _containers.RepeatedCompositeFieldContainer[_messages_pb2.SourceError]
    error: str
    def __init__(self, source_file: _Optional[str] = ..., source_kind: _Optional[str] = ..., status: _Optional[str] = ..., excluded_reason: _Optional[str] = ..., source_sha256: _Optional[str] = ..., chunk_count: _Optional[int] = ..., errors: _Optional[_Iterable[_Union[_messages_pb2.SourceError, _Mapping]]] = ..., error: _Optional[str] = ...) -> None: ...

class ChunkResult(_message.Message):
    __slots__ = ("trace", "span", "status", "judgment", "retriever_query", "hits", "last_error")
    TRACE_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    JUDGMENT_FIELD_NUMBER: _ClassVar[int]
    RETRIEVER_QUERY_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    trace: _messages_pb2.ChunkTrace
    span: _messages_pb2.Span
    status: str
    judgment: _messages_pb2.Judgment
    retriever_query: _messages_pb2.RetrieverQuery
    hits: _containers.RepeatedCompositeFieldContainer[_messages_pb2.RetrievalHit]
    last_error: str
    def __init__(self, trace: _Optional[_Union[_messages_pb2.ChunkTrace, _Mapping]] = ..., span: _Optional[_Union[_messages_pb2.Span, _Mapping]] = ..., status: _Optional[str] = ..., judgment: _Optional[_Union[_messages_pb2.Judgment, _Mapping]] = ..., retriever_query: _Optional[_Union[_messages_pb2.RetrieverQuery, _Mapping]] = ..., hits: _Optional[_Iterable[_Union[_messages_pb2.RetrievalHit, _Mapping]]] = ..., last_error: _Optional[str] = ...) -> None: ...

class AnalysisResult(_message.Message):
    __slots__ = ("analysis_id", "project_id", "prompt", "status", "verdict", "files", "chunks", "dead_letters", "judge_stats")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    JUDGE_STATS_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    project_id: str
    prompt: str
    status: str
    verdict: _messages_pb2.Verdict
    files: _containers.RepeatedCompositeFieldContainer[FileResult]
    chunks: _containers.RepeatedCompositeFieldContainer[ChunkResult]
    dead_letters: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    judge_stats: JudgeStats
    def __init__(self, analysis_id: _Optional[str] = ..., project_id: _Optional[str] = ..., prompt: _Optional[str] = ..., status: _Optional[str] = ..., verdict: _Optional[_Union[_messages_pb2.Verdict, _Mapping]] = ..., files: _Optional[_Iterable[_Union[FileResult, _Mapping]]] = ..., chunks: _Optional[_Iterable[_Union[ChunkResult, _Mapping]]] = ..., dead_letters: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., judge_stats: _Optional[_Union[JudgeStats, _Mapping]] = ...) -> None: ...

class JudgeStats(_message.Message):
    __slots__ = ("judged", "failed", "llm_calls", "llm_calls_saved", "cached", "prompt_tokens", "completion_tokens", "by_route", "cascade")
    class ByRouteEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    JUDGED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    LLM_CALLS_FIELD_NUMBER: _ClassVar[int]
    LLM_CALLS_SAVED_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    BY_ROUTE_FIELD_NUMBER: _ClassVar[int]
    CASCADE_FIELD_NUMBER: _ClassVar[int]
    judged: int
    failed: int
    llm_calls: int
    llm_calls_saved: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    by_route: _containers.ScalarMap[str, int]
    cascade: str
    def __init__(self, judged: _Optional[int] = ..., failed: _Optional[int] = ..., llm_calls: _Optional[int] = ..., llm_calls_saved: _Optional[int] = ..., cached: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., by_route: _Optional[_Mapping[str, int]] = ..., cascade: _Optional[str] = ...) -> None: ...

class DeadLetter(_message.Message):
    __slots__ = ("stage", "subject", "key", "error", "deliveries")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    stage: str
    subject: str
    key: str
    error: str
    deliveries: int
    def __init__(self, stage: _Optional[str] = ..., subject: _Optional[str] = ..., key: _Optional[str] = ..., error: _Optional[str] = ..., deliveries: _Optional[int] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("analysis_id", "status", "files_total", "files_chunked", "chunks_total", "chunks_done", "chunks_failed", "verdict")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FILES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    FILES_CHUNKED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DONE_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FAILED_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    status: str
    files_total: int
    files_chunked: int
    chunks_total: int
    chunks_done: int
    chunks_failed: int
    verdict: _messages_pb2.Verdict
    def __init__(self, analysis_id: _Optional[str] = ..., status: _Optional[str] = ..., files_total: _Optional[int] = ..., files_chunked: _Optional[int] = ..., chunks_total: _Optional[int] = ..., chunks_done: _Optional[int] = ..., chunks_failed: _Optional[int] = ..., verdict: _Optional[_Union[_messages_pb2.Verdict, _Mapping]] = ...) -> None: ...

class PatchRequest(_message.Message):
    __slots__ = ("analysis_id",)
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    def __init__(self, analysis_id: _Optional[str] = ...) -> None: ...

class PatchChange(_message.Message):
    __slots__ = ("rule", "record_id", "confidence", "receiver", "note", "line")
    RULE_FIELD_NUMBER: _ClassVar[int]
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    RECEIVER_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    rule: str
    record_id: str
    confidence: float
    receiver: str
    note: str
    line: int
    def __init__(self, rule: _Optional[str] = ..., record_id: _Optional[str] = ..., confidence: _Optional[float] = ..., receiver: _Optional[str] = ..., note: _Optional[str] = ..., line: _Optional[int] = ...) -> None: ...

class PatchHunk(_message.Message):
    __slots__ = ("hunk", "old_start", "old_len", "new_start", "new_len", "text", "confidence", "changes")
    HUNK_FIELD_NUMBER: _ClassVar[int]
    OLD_START_FIELD_NUMBER: _ClassVar[int]
    OLD_LEN_FIELD_NUMBER: _ClassVar[int]
    NEW_START_FIELD_NUMBER: _ClassVar[int]
    NEW_LEN_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    hunk: str
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    text: str
    confidence: float
    changes: _containers.RepeatedCompositeFieldContainer[PatchChange]
    def __init__(self, hunk: _Optional[str] = ..., old_start: _Optional[int] = ..., old_len: _Optional[int] = ..., new_start: _Optional[int] = ..., new_len: _Optional[int] = ..., text: _Optional[str] = ..., confidence: _Optional[float] = ..., changes: _Optional[_Iterable[_Union[PatchChange, _Mapping]]] = ...) -> None: ...

class PatchTodo(_message.Message):
    __slots__ = ("line", "rule", "symbol", "note", "record_id")
    LINE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    line: int
    rule: str
    symbol: str
    note: str
    record_id: str
    def __init__(self, line: _Optional[int] = ..., rule: _Optional[str] = ..., symbol: _Optional[str] = ..., note: _Optional[str] = ..., record_id: _Optional[str] = ...) -> None: ...

class PatchKept(_message.Message):
    __slots__ = ("line", "symbol", "reason")
    LINE_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    line: int
    symbol: str
    reason: str
    def __init__(self, line: _Optional[int] = ..., symbol: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class PatchFile(_message.Message):
    __slots__ = ("source_file", "sha256", "changed", "edits", "hunks", "todos", "kept", "patched_text")
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    EDITS_FIELD_NUMBER: _ClassVar[int]
    HUNKS_FIELD_NUMBER: _ClassVar[int]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    KEPT_FIELD_NUMBER: _ClassVar[int]
    PATCHED_TEXT_FIELD_NUMBER: _ClassVar[int]
    source_file: str
    sha256: str
    changed: bool
    edits: int
    hunks: _containers.RepeatedCompositeFieldContainer[PatchHunk]
    todos: _containers.RepeatedCompositeFieldContainer[PatchTodo]
    kept: _containers.RepeatedCompositeFieldContainer[PatchKept]
    patched_text: str
    def __init__(self, source_file: _Optional[str] = ..., sha256: _Optional[str] = ..., changed: _Optional[bool] = ..., edits: _Optional[int] = ..., hunks: _Optional[_Iterable[_Union[PatchHunk, _Mapping]]] = ..., todos: _Optional[_Iterable[_Union[PatchTodo, _Mapping]]] = ..., kept: _Optional[_Iterable[_Union[PatchKept, _Mapping]]] = ..., patched_text: _Optional[str] = ...) -> None: ...

class PatchResponse(_message.Message):
    __slots__ = ("analysis_id", "diff", "basis_jsonl", "summary", "files")
    class SummaryEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    BASIS_JSONL_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    diff: str
    basis_jsonl: str
    summary: _containers.ScalarMap[str, int]
    files: _containers.RepeatedCompositeFieldContainer[PatchFile]
    def __init__(self, analysis_id: _Optional[str] = ..., diff: _Optional[str] = ..., basis_jsonl: _Optional[str] = ..., summary: _Optional[_Mapping[str, int]] = ..., files: _Optional[_Iterable[_Union[PatchFile, _Mapping]]] = ...) -> None: ...

class ReplayRequest(_message.Message):
    __slots__ = ("analysis_id", "stage", "chunk_ids", "source_files", "judge", "prompt_version", "cascade", "limit_per_table")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_IDS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILES_FIELD_NUMBER: _ClassVar[int]
    JUDGE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_VERSION_FIELD_NUMBER: _ClassVar[int]
    CASCADE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_PER_TABLE_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    stage: str
    chunk_ids: _containers.RepeatedScalarFieldContainer[str]
    source_files: _containers.RepeatedScalarFieldContainer[str]
    judge: str
    prompt_version: str
    cascade: str
    limit_per_table: int
    def __init__(self, analysis_id: _Optional[str] = ..., stage: _Optional[str] = ..., chunk_ids: _Optional[_Iterable[str]] = ..., source_files: _Optional[_Iterable[str]] = ..., judge: _Optional[str] = ..., prompt_version: _Optional[str] = ..., cascade: _Optional[str] = ..., limit_per_table: _Optional[int] = ...) -> None: ...

class ReplayedChunk(_message.Message):
    __slots__ = ("chunk_id", "source", "published")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    source: str
    published: bool
    def __init__(self, chunk_id: _Optional[str] = ..., source: _Optional[str] = ..., published: _Optional[bool] = ...) -> None: ...

class ReplayResponse(_message.Message):
    __slots__ = ("replay_id", "analysis_id", "stage", "run", "chunks", "status", "judgment_version")
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    JUDGMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    replay_id: str
    analysis_id: str
    stage: str
    run: int
    chunks: _containers.RepeatedCompositeFieldContainer[ReplayedChunk]
    status: str
    judgment_version: str
    def __init__(self, replay_id: _Optional[str] = ..., analysis_id: _Optional[str] = ..., stage: _Optional[str] = ..., run: _Optional[int] = ..., chunks: _Optional[_Iterable[_Union[ReplayedChunk, _Mapping]]] = ..., status: _Optional[str] = ..., judgment_version: _Optional[str] = ...) -> None: ...

class GetReplayRequest(_message.Message):
    __slots__ = ("replay_id",)
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    replay_id: str
    def __init__(self, replay_id: _Optional[str] = ...) -> None: ...

class ResultVersion(_message.Message):
    __slots__ = ("version_id", "stage", "config_json", "base_version", "replay_id", "current", "verdict", "created_at")
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    BASE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    version_id: str
    stage: str
    config_json: str
    base_version: str
    replay_id: str
    current: bool
    verdict: _messages_pb2.Verdict
    created_at: str
    def __init__(self, version_id: _Optional[str] = ..., stage: _Optional[str] = ..., config_json: _Optional[str] = ..., base_version: _Optional[str] = ..., replay_id: _Optional[str] = ..., current: _Optional[bool] = ..., verdict: _Optional[_Union[_messages_pb2.Verdict, _Mapping]] = ..., created_at: _Optional[str] = ...) -> None: ...

class VersionsResponse(_message.Message):
    __slots__ = ("analysis_id", "current_judgment_version", "current_retrieval_version", "versions")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_JUDGMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_RETRIEVAL_VERSION_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    current_judgment_version: str
    current_retrieval_version: str
    versions: _containers.RepeatedCompositeFieldContainer[ResultVersion]
    def __init__(self, analysis_id: _Optional[str] = ..., current_judgment_version: _Optional[str] = ..., current_retrieval_version: _Optional[str] = ..., versions: _Optional[_Iterable[_Union[ResultVersion, _Mapping]]] = ...) -> None: ...

class VerdictVersionRequest(_message.Message):
    __slots__ = ("analysis_id", "version_id")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    version_id: str
    def __init__(self, analysis_id: _Optional[str] = ..., version_id: _Optional[str] = ...) -> None: ...

class VersionedVerdict(_message.Message):
    __slots__ = ("analysis_id", "version_id", "current", "verdict")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    version_id: str
    current: bool
    verdict: _messages_pb2.Verdict
    def __init__(self, analysis_id: _Optional[str] = ..., version_id: _Optional[str] = ..., current: _Optional[bool] = ..., verdict: _Optional[_Union[_messages_pb2.Verdict, _Mapping]] = ...) -> None: ...

class DiffRequest(_message.Message):
    __slots__ = ("a", "b", "analysis_id")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    a: str
    b: str
    analysis_id: str
    def __init__(self, a: _Optional[str] = ..., b: _Optional[str] = ..., analysis_id: _Optional[str] = ...) -> None: ...

class DiffResponse(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...

class ChunkTraceRequest(_message.Message):
    __slots__ = ("analysis_id", "chunk_id")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    chunk_id: str
    def __init__(self, analysis_id: _Optional[str] = ..., chunk_id: _Optional[str] = ...) -> None: ...

class JudgmentVersion(_message.Message):
    __slots__ = ("version_id", "retrieval_version", "current", "judgment", "created_at")
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_VERSION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    JUDGMENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    version_id: str
    retrieval_version: str
    current: bool
    judgment: _messages_pb2.Judgment
    created_at: str
    def __init__(self, version_id: _Optional[str] = ..., retrieval_version: _Optional[str] = ..., current: _Optional[bool] = ..., judgment: _Optional[_Union[_messages_pb2.Judgment, _Mapping]] = ..., created_at: _Optional[str] = ...) -> None: ...

class RetrievalVersion(_message.Message):
    __slots__ = ("version_id", "current", "kb_version", "query", "hits", "created_at")
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    KB_VERSION_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    version_id: str
    current: bool
    kb_version: str
    query: _messages_pb2.RetrieverQuery
    hits: _containers.RepeatedCompositeFieldContainer[_messages_pb2.RetrievalHit]
    created_at: str
    def __init__(self, version_id: _Optional[str] = ..., current: _Optional[bool] = ..., kb_version: _Optional[str] = ..., query: _Optional[_Union[_messages_pb2.RetrieverQuery, _Mapping]] = ..., hits: _Optional[_Iterable[_Union[_messages_pb2.RetrievalHit, _Mapping]]] = ..., created_at: _Optional[str] = ...) -> None: ...

class StageAttempt(_message.Message):
    __slots__ = ("stage", "status", "attempts", "last_error", "worker", "trace_id", "started_at", "updated_at", "duration_ms", "replay_id", "source")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    stage: str
    status: str
    attempts: int
    last_error: str
    worker: str
    trace_id: str
    started_at: str
    updated_at: str
    duration_ms: float
    replay_id: str
    source: str
    def __init__(self, stage: _Optional[str] = ..., status: _Optional[str] = ..., attempts: _Optional[int] = ..., last_error: _Optional[str] = ..., worker: _Optional[str] = ..., trace_id: _Optional[str] = ..., started_at: _Optional[str] = ..., updated_at: _Optional[str] = ..., duration_ms: _Optional[float] = ..., replay_id: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class ChunkTraceDetail(_message.Message):
    __slots__ = ("trace", "span", "status", "text", "query", "hits", "judgments", "retrievals", "attempts", "trace_id")
    TRACE_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    JUDGMENTS_FIELD_NUMBER: _ClassVar[int]
    RETRIEVALS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    trace: _messages_pb2.ChunkTrace
    span: _messages_pb2.Span
    status: str
    text: str
    query: _messages_pb2.RetrieverQuery
    hits: _containers.RepeatedCompositeFieldContainer[_messages_pb2.RetrievalHit]
    judgments: _containers.RepeatedCompositeFieldContainer[JudgmentVersion]
    retrievals: _containers.RepeatedCompositeFieldContainer[RetrievalVersion]
    attempts: _containers.RepeatedCompositeFieldContainer[StageAttempt]
    trace_id: str
    def __init__(self, trace: _Optional[_Union[_messages_pb2.ChunkTrace, _Mapping]] = ..., span: _Optional[_Union[_messages_pb2.Span, _Mapping]] = ..., status: _Optional[str] = ..., text: _Optional[str] = ..., query: _Optional[_Union[_messages_pb2.RetrieverQuery, _Mapping]] = ..., hits: _Optional[_Iterable[_Union[_messages_pb2.RetrievalHit, _Mapping]]] = ..., judgments: _Optional[_Iterable[_Union[JudgmentVersion, _Mapping]]] = ..., retrievals: _Optional[_Iterable[_Union[RetrievalVersion, _Mapping]]] = ..., attempts: _Optional[_Iterable[_Union[StageAttempt, _Mapping]]] = ..., trace_id: _Optional[str] = ...) -> None: ...

class ListChunksPageRequest(_message.Message):
    __slots__ = ("analysis_id", "status", "signal", "source_file", "needs_migration", "page_size", "page_token")
    ANALYSIS_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    NEEDS_MIGRATION_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    analysis_id: str
    status: str
    signal: str
    source_file: str
    needs_migration: str
    page_size: int
    page_token: str
    def __init__(self, analysis_id: _Optional[str] = ..., status: _Optional[str] = ..., signal: _Optional[str] = ..., source_file: _Optional[str] = ..., needs_migration: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ChunkPage(_message.Message):
    __slots__ = ("chunks", "next_page_token", "total")
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    chunks: _containers.RepeatedCompositeFieldContainer[ChunkResult]
    next_page_token: str
    total: int
    def __init__(self, chunks: _Optional[_Iterable[_Union[ChunkResult, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ...) -> None: ...
