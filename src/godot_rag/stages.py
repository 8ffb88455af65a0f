"""Stage names, subjects, statuses and versions: defined here once.

Every service, the stage runner, the dead-letter router, the bench and the
Kubernetes consistency test read these names from this module, so a subject
or a durable is never spelled twice.

Subjects (NATS JetStream):

- ``grag.file.<route>.<analysis>.<file_key>`` on stream ``GRAG_FILES``:
  one task per included file; route ``ast`` goes to the parser, ``direct``
  to the chunker.
- ``grag.chunk.<stage>.<analysis>.<chunk_key>`` on stream ``GRAG_CHUNKS``:
  one task per chunk and stage (``retrieve``, ``judge``, ``aggregate``), plus
  ``filedone`` events keyed by file.

``file_key`` and ``chunk_key`` are :func:`godot_rag.domain.ids.subject_token`
of the path or chunk id. A message id is ``analysis:key:stage:version``
(:func:`godot_rag.domain.ids.message_id`), so a republish after a restart is
dropped by JetStream's dedupe window.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from godot_rag.domain.aggregation.verdict import AGGREGATOR_VERSION
from godot_rag.domain.chunking.direct import CHUNKER_VERSION
from godot_rag.domain.chunking.gdscript import PARSER_VERSION
from godot_rag.domain.judging.project_index import PROJECT_INDEX_VERSION
from godot_rag.domain.judging.rules import RULES_JUDGE_VERSION
from godot_rag.domain.retrieval.knowledge import KB_DATA_VERSION
from godot_rag.domain.retrieval.query import RETRIEVAL_VERSION

STREAM_FILES = "GRAG_FILES"
STREAM_CHUNKS = "GRAG_CHUNKS"
# JetStream's MaxDeliver advisories of our consumers, kept in a stream of their
# own so that one published while no service listens is still handled later.
STREAM_ADVISORIES = "GRAG_ADVISORIES"
MAX_DELIVERIES_ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"

FILE_PREFIX = "grag.file"
CHUNK_PREFIX = "grag.chunk"


class Stage(StrEnum):
    """The pipeline's stages, in order. File stages cut files; chunk stages follow each chunk."""

    PARSE = "parse"  # .gd files -> AST chunks (service: parser)
    CHUNK = "chunk"  # other text files -> direct chunks (service: chunker)
    RETRIEVE = "retrieve"
    JUDGE = "judge"
    AGGREGATE = "aggregate"


CHUNK_STAGES: tuple[Stage, ...] = (Stage.RETRIEVE, Stage.JUDGE, Stage.AGGREGATE)


class Status(StrEnum):
    """A chunk's state in one stage (table chunk_stages)."""

    WAITING = "waiting"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    FAILED = "failed"


class ChunkStatus(StrEnum):
    """A chunk's overall state, as the API and the UI show it."""

    WAITING = "waiting"
    IN_PROGRESS = "in_progress"
    INTERRUPTED = "interrupted"  # was in progress when the analysis stopped being worked on
    DONE = "done"
    FAILED = "failed"


class FileStatus(StrEnum):
    QUEUED = "queued"
    CHUNKED = "chunked"
    FAILED = "failed"
    EXCLUDED = "excluded"


class AnalysisStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"
    # Every chunk is settled but some failed: the verdict stands on the rest,
    # and the failures are listed (never reported as a plain "done").
    DONE_WITH_FAILURES = "completed_with_failures"


# The version of each stage's message contract, part of every Nats-Msg-Id.
STAGE_VERSION = "1"
FILE_DONE = "filedone"
FILE_TASK = "file"


class FileRoute(StrEnum):
    AST = "ast"  # parser
    DIRECT = "direct"  # chunker


@dataclass(frozen=True)
class ConsumerSpec:
    """One durable pull consumer: who reads which subjects, how patiently, how many at once."""

    durable: str
    stream: str
    filter_subjects: tuple[str, ...]
    ack_wait_s: float
    max_ack_pending: int
    max_deliver: int = 6  # -1: unlimited (the dead-letter watcher must never give up)
    # Overall cap on one handling of one message, progress acks included: past
    # it the handler is cancelled and the message naked (dead-lettered on its
    # last delivery), so a hung handler cannot hold its message forever.
    max_handling_s: float = 300.0
    # Setting that overrides max_ack_pending (GODOT_RAG_<NAME>), so replicas and
    # the consumer's in-flight bound come from one configuration.
    max_ack_pending_setting: str = ""


def file_subject(route: str, analysis_id: str, file_key: str) -> str:
    return f"{FILE_PREFIX}.{route}.{analysis_id}.{file_key}"


def chunk_subject(stage: str, analysis_id: str, chunk_key: str) -> str:
    return f"{CHUNK_PREFIX}.{stage}.{analysis_id}.{chunk_key}"


@dataclass(frozen=True)
class SubjectParts:
    family: str  # "file" | "chunk"
    step: str  # file route (ast, direct) or chunk stage (retrieve, judge, aggregate, filedone)
    analysis_id: str
    key: str


def parse_subject(subject: str) -> SubjectParts | None:
    """The parts of one of our subjects; None for anything else."""
    parts = subject.split(".")
    if len(parts) != 5 or parts[0] != "grag" or parts[1] not in ("file", "chunk"):
        return None
    return SubjectParts(parts[1], parts[2], parts[3], parts[4])


# The consumers, by service. MaxAckPending is what one process really does at
# once; the retriever holds many so its query embeddings batch together, and
# the file stages 16 so that a project's many small files are read in one
# statement and committed in one transaction (at 4 the commits of one-function
# files took half the parser's CPU).
PARSER = ConsumerSpec(
    "parser",
    STREAM_FILES,
    (f"{FILE_PREFIX}.{FileRoute.AST}.>",),
    ack_wait_s=60,
    max_ack_pending=16,
    max_ack_pending_setting="PARSER_MAX_ACK_PENDING",
)
CHUNKER = ConsumerSpec(
    "chunker",
    STREAM_FILES,
    (f"{FILE_PREFIX}.{FileRoute.DIRECT}.>",),
    ack_wait_s=60,
    max_ack_pending=16,
    max_ack_pending_setting="CHUNKER_MAX_ACK_PENDING",
)
RETRIEVER = ConsumerSpec(
    "retriever",
    STREAM_CHUNKS,
    (f"{CHUNK_PREFIX}.{Stage.RETRIEVE}.>",),
    ack_wait_s=30,
    max_ack_pending=64,
    max_ack_pending_setting="RETRIEVER_MAX_ACK_PENDING",
    max_handling_s=120,
)
# The judge's bound follows the LLM server's useful concurrency when a model judges.
# An LLM judgment may take llm_timeout_s per try, several tries and a repair attempt.
JUDGE = ConsumerSpec(
    "judge",
    STREAM_CHUNKS,
    (f"{CHUNK_PREFIX}.{Stage.JUDGE}.>",),
    ack_wait_s=60,
    max_ack_pending=32,
    max_ack_pending_setting="JUDGE_MAX_ACK_PENDING",
    max_handling_s=900,
)
AGGREGATOR = ConsumerSpec(
    "aggregator",
    STREAM_CHUNKS,
    (f"{CHUNK_PREFIX}.{Stage.AGGREGATE}.>", f"{CHUNK_PREFIX}.{FILE_DONE}.>"),
    ack_wait_s=30,
    max_ack_pending=64,
    max_ack_pending_setting="AGGREGATOR_MAX_ACK_PENDING",
    max_handling_s=120,
)

CONSUMERS: dict[str, ConsumerSpec] = {c.durable: c for c in (PARSER, CHUNKER, RETRIEVER, JUDGE, AGGREGATOR)}

# Every stage service also reads the MaxDeliver advisories (one shared durable):
# a message whose worker died on every delivery is dead-lettered and settled by
# whichever service is alive. Unlimited deliveries: an advisory is never dropped.
DEAD_LETTER_WATCH = ConsumerSpec(
    "deadletters",
    STREAM_ADVISORIES,
    (f"{MAX_DELIVERIES_ADVISORY}.>",),
    ack_wait_s=30,
    max_ack_pending=8,
    max_deliver=-1,
    max_handling_s=120,
)

# The stage each chunk stage hands its chunk to; the aggregator is last.
NEXT_STAGE: dict[Stage, Stage | None] = {Stage.RETRIEVE: Stage.JUDGE, Stage.JUDGE: Stage.AGGREGATE, Stage.AGGREGATE: None}

# Component versions an analysis result depends on (the analysis id includes them).
COMPONENT_VERSIONS: dict[str, str] = {
    "parser": PARSER_VERSION,
    "chunker": CHUNKER_VERSION,
    "retrieval": RETRIEVAL_VERSION,
    "kb": KB_DATA_VERSION,
    "rules_judge": RULES_JUDGE_VERSION,
    "project_index": PROJECT_INDEX_VERSION,
    "verdict": AGGREGATOR_VERSION,
}
