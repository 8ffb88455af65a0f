"""Replay: run one stage (and the stages after it) again for chosen chunks of a finished analysis.

The message of each chunk is taken from the JetStream stream (the stage's last
message on the chunk's subject, kept for the stream's retention) or, once it
has aged out, rebuilt from the stored chunk; each replayed chunk says which.
The replay's configuration (judge, prompt version, cascade, per-table limit)
travels in the message (``ChunkTask.replay``), and its message ids carry the
replay and its run, so JetStream does not drop them as duplicates of the
analysis's own.

A replay is identified by (analysis, stage, configuration): asking for the same
replay again resumes it (only chunks it has not settled are published) and,
once done, writes nothing new: the same configuration is the same version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from godot_rag.domain.aggregation.versions import replay_id_of
from godot_rag.domain.ids import message_id, replay_message_version, subject_token
from godot_rag.errors import InvalidInputError, NotFoundError, NotReadyError
from godot_rag.infra.bus import Bus
from godot_rag.infra.rows import ChunkTaskRow
from godot_rag.infra.store import Store
from godot_rag.pipeline.judging import check_judge_config
from godot_rag.prompts import JUDGE_PROMPT_VERSION
from godot_rag.settings import Settings
from godot_rag.stages import NEXT_STAGE, STREAM_CHUNKS, AnalysisStatus, Stage, chunk_subject
from godot_rag.v1 import messages_pb2 as pb

REPLAY_STAGES = (Stage.RETRIEVE, Stage.JUDGE)
SOURCE_STREAM = "stream"
SOURCE_STORE = "store"


@dataclass(frozen=True)
class ReplayOptions:
    analysis_id: str
    stage: str = Stage.JUDGE
    chunk_ids: tuple[str, ...] = ()
    source_files: tuple[str, ...] = ()
    judge: str = ""
    prompt_version: str = ""
    cascade: str = ""
    limit_per_table: int = 0


@dataclass
class ReplayedChunk:
    chunk_id: str
    source: str  # stream | store | "" (already settled by this replay)
    published: bool


@dataclass
class ReplayStarted:
    replay_id: str
    analysis_id: str
    stage: str
    run: int
    status: str
    judgment_version: str
    chunks: list[ReplayedChunk] = field(default_factory=list)


def replay_config(settings: Settings, opts: ReplayOptions) -> dict:
    """The replay's full configuration, defaults filled in from the stack's settings (so the id is stable)."""
    if opts.stage not in REPLAY_STAGES:
        raise InvalidInputError(f"replay stage must be one of {', '.join(REPLAY_STAGES)}, not {opts.stage!r}")
    judge = opts.judge or settings.judge
    llm = judge == "llm"
    if not llm and opts.prompt_version:
        raise InvalidInputError("the rules judge takes no prompt version (use --judge llm)")
    cascade = (opts.cascade or settings.judge_cascade) if llm else ""
    prompt_version = (opts.prompt_version or JUDGE_PROMPT_VERSION) if llm else ""
    check_judge_config(settings, judge, prompt_version, cascade or "all")
    if opts.limit_per_table < 0:
        raise InvalidInputError("limit_per_table must be positive")
    if opts.limit_per_table and opts.stage != Stage.RETRIEVE:
        raise InvalidInputError("a per-table limit applies to a retrieve replay (--stage retrieve)")
    return {
        "judge": judge,
        "prompt_version": prompt_version,
        "cascade": cascade,
        "cascade_threshold": settings.judge_cascade_threshold if cascade == "ambiguous" else 0.0,
        "limit_per_table": (opts.limit_per_table or settings.retrieval_limit_per_table) if opts.stage == Stage.RETRIEVE else 0,
    }


def stages_from(stage: Stage) -> list[Stage]:
    stages: list[Stage] = []
    current: Stage | None = stage
    while current is not None:
        stages.append(current)
        current = NEXT_STAGE[current]
    return stages


def task_from_row(analysis_id: str, row: ChunkTaskRow) -> pb.ChunkTask:
    """The chunk's message as the chunking stage published it, rebuilt from the stored chunk."""
    return pb.ChunkTask(
        analysis_id=analysis_id,
        trace=pb.ChunkTrace(
            project_id=row.project_id,
            source_file=row.source_file,
            source_sha256=row.sha256,
            chunk_id=row.chunk_id,
            chunk_order=row.chunk_order,
            chunk_kind=row.chunk_kind,
        ),
    )


async def start_replay(store: Store, bus: Bus, settings: Settings, opts: ReplayOptions) -> ReplayStarted:
    analysis = await store.get_analysis(opts.analysis_id)
    if analysis is None:
        raise NotFoundError(f"no analysis {opts.analysis_id}")
    if analysis.status == AnalysisStatus.RUNNING:
        raise NotReadyError(f"analysis {opts.analysis_id} is still running; replay it once it has finished")
    config = replay_config(settings, opts)
    stage = Stage(opts.stage)
    base_version = analysis.current_judgment_version
    if stage == Stage.JUDGE:
        # Judged as of the base version's retrieval: part of the configuration (and of the replay's id).
        base = {v.version_id: v for v in await store.result_versions(opts.analysis_id)}.get(base_version)
        config["retrieval_version"] = str(
            ((base.config if base is not None else None) or {}).get("retrieval_version", base_version)
        )
    rows = await store.chunk_task_rows(opts.analysis_id, opts.chunk_ids, opts.source_files)
    found = {r.chunk_id for r in rows}
    missing = [c for c in opts.chunk_ids if c not in found]
    if missing:
        raise NotFoundError(f"analysis {opts.analysis_id} has no chunk {', '.join(missing)}")
    files = {r.source_file for r in rows}
    missing_files = [f for f in opts.source_files if f not in files]
    if missing_files:
        raise NotFoundError(f"analysis {opts.analysis_id} has no chunk in {', '.join(missing_files)}")
    if not rows:
        raise InvalidInputError(f"analysis {opts.analysis_id} has no chunks to replay")
    replay_id = replay_id_of(opts.analysis_id, stage, config)
    recorded = await store.start_replay(
        replay_id=replay_id,
        analysis_id=opts.analysis_id,
        from_stage=stage,
        config=config,
        base_version=base_version,
        chunk_ids=[r.chunk_id for r in rows],
        stages=stages_from(stage),
    )
    replay = recorded.replay
    run = replay.run
    spec = pb.ReplaySpec(
        replay_id=replay_id,
        from_stage=stage,
        judge=config["judge"],
        prompt_version=config["prompt_version"],
        cascade=config["cascade"],
        cascade_threshold=config["cascade_threshold"],
        limit_per_table=config["limit_per_table"],
        run=run,
        retrieval_version=config.get("retrieval_version", ""),
    )
    settled = set(recorded.settled)
    started = ReplayStarted(
        replay_id=replay_id,
        analysis_id=opts.analysis_id,
        stage=stage,
        run=run,
        status=replay.status,
        judgment_version=replay.judgment_version,
    )
    for row in rows:
        chunk_id = row.chunk_id
        if chunk_id in settled:
            started.chunks.append(ReplayedChunk(chunk_id, "", False))
            continue
        subject = chunk_subject(stage, opts.analysis_id, subject_token(chunk_id))
        task, source = await _message_of(bus, subject, opts.analysis_id, row)
        task.replay.CopyFrom(spec)
        task.replay.source = source
        await store.set_replay_source(replay_id, chunk_id, source)
        await bus.publish(
            subject, task.SerializeToString(), message_id(opts.analysis_id, chunk_id, stage, replay_message_version(replay_id, run))
        )
        started.chunks.append(ReplayedChunk(chunk_id, source, True))
    if not any(c.published for c in started.chunks):
        done = await store.replay_row(replay_id)
        started.status = done.status if done is not None else started.status
    return started


async def _message_of(bus: Bus, subject: str, analysis_id: str, row: ChunkTaskRow) -> tuple[pb.ChunkTask, str]:
    """The stage's last message for the chunk from the stream, else the one rebuilt from the store."""
    data = await bus.last_message(STREAM_CHUNKS, subject)
    if data is not None:
        task = pb.ChunkTask.FromString(data)
        # Subjects are hashes of the chunk id: a mismatch would be a collision, so the store decides then.
        if task.analysis_id == analysis_id and task.trace.chunk_id == row.chunk_id:
            task.ClearField("replay")
            return task, SOURCE_STREAM
    return task_from_row(analysis_id, row), SOURCE_STORE


async def replay_status(store: Store, replay_id: str) -> ReplayStarted:
    replay = await store.replay_row(replay_id)
    if replay is None:
        raise NotFoundError(f"no replay {replay_id}")
    chunks = {}
    for r in await store.replay_chunk_rows(replay_id):
        if r.stage == replay.from_stage:
            chunks[r.chunk_id] = ReplayedChunk(r.chunk_id, r.source, True)
    return ReplayStarted(
        replay_id=replay_id,
        analysis_id=replay.analysis_id,
        stage=replay.from_stage,
        run=replay.run,
        status=replay.status,
        judgment_version=replay.judgment_version,
        chunks=list(chunks.values()),
    )
