"""Every typed read of the store against the real schema, after one analysis and one replay on the real stack.

A row type whose columns differ from what its query selects raises RowShapeError
where it is built: each read below is a check that the query and the type agree.
"""

from __future__ import annotations

import time
from datetime import datetime

import psycopg
import pytest

from godot_rag.infra import rows
from godot_rag.infra.store import Store
from godot_rag.v1 import services_pb2 as spb

PROMPT = "Typed rows check: is this project Godot 3 or Godot 4?"


@pytest.fixture(scope="module")
def analysed(stack, repo) -> tuple[spb.AnalysisResult, str]:
    """An analysis of the Godot 3 sample, and a finished replay of its first chunk (one hit per table: a new version)."""
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=PROMPT, path=str(repo / "samples" / "godot3_project")), timeout=120)
    last = None
    for progress in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=300):
        last = progress
    assert last is not None and last.status == "done", last
    result = stack.gateway.Get(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=60)
    started = stack.gateway.Replay(
        spb.ReplayRequest(
            analysis_id=result.analysis_id, stage="retrieve", chunk_ids=[result.chunks[0].trace.chunk_id], limit_per_table=1
        ),
        timeout=120,
    )
    state = started
    deadline = time.monotonic() + 300
    while state.status == "running":
        assert time.monotonic() < deadline, f"replay {started.replay_id} did not finish"
        time.sleep(0.3)
        state = stack.gateway.GetReplay(spb.GetReplayRequest(replay_id=started.replay_id), timeout=30)
    assert state.status == "done", state
    return result, started.replay_id


async def test_every_typed_read_matches_its_query(stack, analysed):
    result, replay_id = analysed
    aid = result.analysis_id
    chunk_id = result.chunks[0].trace.chunk_id
    source_file = result.chunks[0].trace.source_file
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        listed = await store.list_analyses()
        assert all(isinstance(a, rows.AnalysisSummary) for a in listed)
        mine = next(a for a in listed if a.analysis_id == aid)
        assert mine.label in ("godot3", "godot4", "mixed", "undetermined") and mine.status == "done"
        assert isinstance(mine.created_at, datetime) and mine.files_total == len(result.files)

        files = await store.list_files(aid)
        assert [f.source_file for f in files] == [f.source_file for f in result.files]
        assert all(isinstance(f, rows.FileRow) for f in files)
        one = await store.get_file(aid, source_file)
        assert one is not None and one.included and one.sha256 == result.chunks[0].trace.source_sha256
        assert await store.get_file(aid, "no/such/file.gd") is None
        assert [f.source_file for f in await store.web_files_changed(aid)] == [f.source_file for f in files]

        chunk = await store.get_chunk(aid, chunk_id)
        assert isinstance(chunk, rows.ChunkRow) and chunk.chunk["chunk_id"] == chunk_id

        retrieval = await store.get_retrieval(aid, chunk_id)
        assert isinstance(retrieval, rows.RetrievalRow) and isinstance(retrieval.hits, list)
        again = await store.get_retrieval_version(aid, chunk_id, retrieval.version_id)
        assert again is not None and again.hits == retrieval.hits
        retrieval_versions = [r.version_id for r in await store.retrieval_version_rows(aid, chunk_id)]
        assert len(retrieval_versions) == 2 and retrieval.version_id == retrieval_versions[0]  # newest first: the replay's

        judgment = await store.get_judgment(aid, chunk_id)
        assert isinstance(judgment, rows.JudgmentRow) and judgment.judgment["signal"] in ("godot3", "godot4", "neutral")
        stages = await store.chunk_stages(aid, chunk_id)
        assert [s.stage for s in stages] == ["aggregate", "judge", "retrieve"] and all(s.status == "done" for s in stages)

        verdict = await store.get_verdict(aid)
        assert isinstance(verdict, rows.VerdictRow) and verdict.label == mine.label and isinstance(verdict.counts, dict)

        results = await store.list_chunk_results(aid)
        assert [r.chunk_id for r in results] == [c.trace.chunk_id for c in result.chunks]
        assert all(isinstance(r, rows.ChunkResultRow) and r.stages for r in results)

        progress = await store.progress(aid)
        assert progress.chunks_total == progress.chunks_done == len(result.chunks) and progress.chunks_failed == 0
        assert await store.dead_letters(aid) == []

        versions = await store.result_versions(aid)
        assert {v.stage for v in versions} == {"retrieve", "judge"}
        judge_versions = [v for v in versions if v.stage == "judge"]
        assert len(judge_versions) == 2  # the analysis's own and the replay's
        assert all(v.label for v in judge_versions)  # each judgment version's verdict is stored
        for v in judge_versions:
            stored = await store.verdict_version(aid, v.version_id)
            assert stored is not None and stored.label == v.label
        judged = await store.judgment_version_rows(aid, chunk_id)
        assert len(judged) == 2 and all(isinstance(j, rows.JudgmentVersionRow) for j in judged)

        places = await store.chunk_places(aid)
        assert [p.chunk_id for p in places] == [r.chunk_id for r in results] and {p.agg_status for p in places} == {"done"}
        tasks = await store.chunk_task_rows(aid, [chunk_id], [])
        assert [(t.chunk_id, t.project_id) for t in tasks] == [(chunk_id, result.project_id)]

        replay = await store.replay_row(replay_id)
        assert isinstance(replay, rows.ReplayRow) and replay.status == "done" and replay.run == 1
        replay_rows = await store.replay_chunk_rows(replay_id)
        assert {(r.chunk_id, r.stage) for r in replay_rows} == {(chunk_id, s) for s in ("retrieve", "judge", "aggregate")}
        of_chunk = await store.replay_stage_rows_of_chunk(aid, chunk_id)
        assert {r.from_stage for r in of_chunk} == {"retrieve"} and all(r.replay_id == replay_id for r in of_chunk)
        assert await store.finish_replay_if_complete(replay_id) is None  # already finished

        web = await store.web_chunk_rows(aid)
        assert [w.chunk_id for w in web] == [r.chunk_id for r in results]
        assert all(isinstance(w, rows.WebChunkRow) and w.changed_at is not None for w in web)
        assert await store.web_chunk_rows(aid, datetime.now(web[0].changed_at.tzinfo)) == []
        timing = await store.web_timing(aid)
        assert timing.done == len(result.chunks) and timing.cursor is not None
        file_chunks = await store.web_file_chunks(aid, source_file)
        assert chunk_id in [c.chunk_id for c in file_chunks]
        assert all(isinstance(c, rows.WebFileChunkRow) and c.judgment for c in file_chunks)
        file_versions = await store.web_file_versions(result.project_id, source_file)
        assert aid in [v.analysis_id for v in file_versions]
        latest = await store.web_latest_analysis(result.project_id)
        assert isinstance(latest, rows.LatestAnalysis)

        matches = await store.find_records("Vector2")
        assert matches and all(isinstance(m, rows.KbRecordMatch) and m.table_name and m.id for m in matches)
    finally:
        await store.close()


def _execute(stack, statement: str, *params) -> None:
    with psycopg.connect(stack.runtime["pg_dsn"]) as conn:
        conn.execute(statement, params)


def _counted_progress(stack, aid: str) -> tuple[int, int, int, int, int]:
    """The progress counted row by row, as it was read before migration 0022: the oracle of Store.progress."""
    row = stack.sql(
        """select
            (select count(*) from godot_rag.files where analysis_id = %(a)s and included) as files_total,
            (select count(*) from godot_rag.files where analysis_id = %(a)s and included and status <> 'queued') as files_chunked,
            (select count(*) from godot_rag.chunks where analysis_id = %(a)s) as chunks_total,
            (select count(*) from godot_rag.chunk_stages where analysis_id = %(a)s and stage = 'aggregate' and status = 'done')
              as chunks_done,
            (select count(distinct chunk_id) from godot_rag.chunk_stages where analysis_id = %(a)s and status = 'failed')
              as chunks_failed""",
        {"a": aid},
    )[0]
    return (row["files_total"], row["files_chunked"], row["chunks_total"], row["chunks_done"], row["chunks_failed"])


async def test_progress_counts_what_the_rows_say_at_every_step_of_an_analysis(stack):
    aid = f"progress-{time.time_ns()}"
    files = [
        {"source_file": name, "source_kind": "gdscript", "included": True, "excluded_reason": "", "sha256": name, "size": 1}
        for name in ("a.gd", "b.gd", "c.gd")
    ] + [{"source_file": "x.bin", "source_kind": "binary", "included": False, "excluded_reason": "binary", "sha256": "", "size": 9}]
    chunk = {"span": {"start_line": 1, "end_line": 1}, "chunk_kind": "function"}
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        await store.create_analysis(
            analysis_id=aid, project_id="p", prompt="q", source_origin="test", input_ref="t", pipeline_version="v", files=files
        )

        async def same() -> tuple[int, int, int, int, int]:
            p = await store.progress(aid)
            mine = (p.files_total, p.files_chunked, p.chunks_total, p.chunks_done, p.chunks_failed)
            assert mine == _counted_progress(stack, aid)
            return mine

        assert await same() == (3, 0, 0, 0, 0)
        await store.save_file_chunks(aid, "a.gd", {"chunks": [{**chunk, "chunk_id": f"a{i}", "chunk_order": i} for i in range(3)]})
        await store.save_file_chunks(
            aid,
            "b.gd",
            {"status": "failed", "chunks": [{**chunk, "chunk_id": "b0", "chunk_order": 0}], "errors": [{"message": "bad"}]},
        )
        assert await same() == (3, 2, 4, 0, 0)
        _execute(
            stack, "update godot_rag.chunk_stages set status = 'done' where analysis_id = %s and chunk_id in ('a0', 'a1')", aid
        )
        _execute(
            stack,
            "update godot_rag.chunk_stages set status = 'failed' where analysis_id = %s and chunk_id = 'a2' and stage = 'retrieve'",
            aid,
        )
        assert await same() == (3, 2, 4, 2, 1)  # a chunk failed at one stage: not done, counted once as failed
        _execute(stack, "update godot_rag.chunk_stages set status = 'failed' where analysis_id = %s and chunk_id = 'a2'", aid)
        _execute(stack, "update godot_rag.chunk_stages set status = 'done' where analysis_id = %s and chunk_id = 'b0'", aid)
        await store.save_file_chunks(aid, "c.gd", {"chunks": []})
        assert await same() == (3, 3, 4, 3, 1)
    finally:
        await store.close()


async def test_a_file_tasks_reads_are_one_statement_that_reads_the_content_only_when_nothing_is_cached(stack):
    aid = f"inputs-{time.time_ns()}"
    data = b"extends Node\n"
    sha = f"sha-{aid}"
    files = [
        {
            "source_file": p,
            "source_kind": "gdscript",
            "included": True,
            "excluded_reason": "",
            "sha256": sha,
            "size": len(data),
            "data": data,
        }
        for p in ("a.gd", "b.gd")
    ]
    output = {"source_file": "a.gd", "status": "ok", "chunks": []}
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        await store.create_analysis(
            analysis_id=aid, project_id="p", prompt="q", source_origin="test", input_ref="t", pipeline_version="v", files=files
        )
        first = await store.file_task_inputs(aid, "a.gd", sha, "gdscript", "v1")
        assert first is not None and first.file.status == "queued" and first.cached is None and first.blob == data
        await store.save_file_chunks(aid, "a.gd", output, cache_as=(sha, "gdscript", "v1"))
        again = await store.file_task_inputs(aid, "a.gd", sha, "gdscript", "v1")
        assert again is not None and again.file.status == "chunked" and again.cached == output and again.blob is None
        # The same content at another path: the cached chunk ids name a.gd, so b.gd reads its content.
        other = await store.file_task_inputs(aid, "b.gd", sha, "gdscript", "v1")
        assert other is not None and other.cached is None and other.blob == data
        stale = await store.file_task_inputs(aid, "a.gd", sha, "gdscript", "v2")  # another chunker version
        assert stale is not None and stale.cached is None and stale.blob == data
        assert await store.file_task_inputs(aid, "missing.gd", sha, "gdscript", "v1") is None
    finally:
        await store.close()
