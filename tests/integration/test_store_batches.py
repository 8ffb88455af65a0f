"""Group-committed store calls on real PostgreSQL: many handlers' calls in one statement, each its own answer."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest
from psycopg.types.json import Jsonb

from godot_rag.infra.store import Store
from godot_rag.v1 import services_pb2 as spb

PROMPT = "Batch check: is this project Godot 3 or Godot 4?"


@pytest.fixture(scope="module")
def analysis(stack, repo) -> tuple[str, list[str]]:
    """A finished analysis of the Godot 4 sample: its id and chunk ids (the chunk rows the stage rows refer to)."""
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=PROMPT, path=str(repo / "samples" / "godot4_project")), timeout=120)
    last = None
    for progress in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=300):
        last = progress
    assert last is not None and last.status == "done", last
    rows = stack.sql("select chunk_id from godot_rag.chunks where analysis_id = %s order by chunk_id", (submitted.analysis_id,))
    assert len(rows) >= 8
    return submitted.analysis_id, [r["chunk_id"] for r in rows]


def attempts(stack, aid: str, stage: str) -> dict[str, tuple[str, int]]:
    rows = stack.sql(
        "select chunk_id, status, attempts from godot_rag.chunk_stages where analysis_id = %s and stage = %s", (aid, stage)
    )
    return {r["chunk_id"]: (r["status"], r["attempts"]) for r in rows}


async def test_claims_and_settlements_made_together_are_batched_and_answered_one_by_one(stack, analysis):
    aid, chunks = analysis
    some = chunks[:8]
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        claimed = await asyncio.gather(*(store.claim_stage(aid, c, "batch_a", worker="w", trace_id="t") for c in some))
        assert claimed == [True] * len(some)
        assert store._claims.batches <= 2 and store._claims.items == len(some)
        # In progress is not settled: a redelivery claims again, one more attempt.
        assert await asyncio.gather(*(store.claim_stage(aid, c, "batch_a", worker="w") for c in some)) == [True] * len(some)
        assert attempts(stack, aid, "batch_a") == {c: ("in_progress", 2) for c in some}

        await asyncio.gather(
            *(
                store.finish_stage(
                    aid,
                    c,
                    "batch_a",
                    "failed" if i == 0 else "done",
                    error="boom" if i == 0 else "",
                    worker="w",
                    next_stage="batch_b",
                )
                for i, c in enumerate(some)
            )
        )
        assert attempts(stack, aid, "batch_a") == {c: ("failed" if i == 0 else "done", 2) for i, c in enumerate(some)}
        assert {c: s for c, (s, _) in attempts(stack, aid, "batch_b").items()} == {c: "waiting" for c in some}
        errors = stack.sql(
            "select last_error from godot_rag.chunk_stages where analysis_id = %s and chunk_id = %s and stage = 'batch_a'",
            (aid, some[0]),
        )
        assert errors == [{"last_error": "boom"}]
        # Settled is final: claims of settled stages answer False, each for itself.
        mixed = await asyncio.gather(
            *(store.claim_stage(aid, c, stage, worker="w") for c in some[:3] for stage in ("batch_a", "batch_b"))
        )
        assert mixed == [False, True] * 3

        statuses = await asyncio.gather(*(store.stage_statuses(aid, c, ("batch_a", "batch_b")) for c in some[:3]))
        assert statuses == [
            {"batch_a": "failed", "batch_b": "in_progress"},
            {"batch_a": "done", "batch_b": "in_progress"},
            {"batch_a": "done", "batch_b": "in_progress"},
        ]
        assert await store.stage_statuses(aid, some[0], ("no_such_stage",)) == {}
    finally:
        await store.close()


async def test_the_same_chunk_stage_twice_at_once_is_two_statements_as_if_one_after_the_other(stack, analysis):
    aid, chunks = analysis
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        both = await asyncio.gather(
            store.claim_stage(aid, chunks[0], "batch_c", worker="w1"), store.claim_stage(aid, chunks[0], "batch_c", worker="w2")
        )
        assert both == [True, True]
        assert attempts(stack, aid, "batch_c") == {chunks[0]: ("in_progress", 2)}
    finally:
        await store.close()


async def test_a_refused_item_fails_alone_and_the_rest_of_its_batch_is_claimed(stack, analysis):
    aid, chunks = analysis
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        results = await asyncio.gather(
            store.claim_stage(aid, chunks[1], "batch_d", worker="w"),
            store.claim_stage(aid, "no/such/chunk", "batch_d", worker="w"),  # no chunk row: a foreign key refuses it
            store.claim_stage(aid, chunks[2], "batch_d", worker="w"),
            return_exceptions=True,
        )
        assert results[0] is True and results[2] is True
        assert isinstance(results[1], psycopg.errors.ForeignKeyViolation)
        assert set(attempts(stack, aid, "batch_d")) == {chunks[1], chunks[2]}
    finally:
        await store.close()


async def test_embedding_cache_reads_and_writes_in_one_statement_each(stack):
    store = await Store.open(stack.runtime["pg_dsn"])
    model = f"batch-test-model-{time.time_ns()}"
    try:
        vec = [0.5] + [0.0] * 383
        other = [0.0, 1.0] + [0.0] * 382
        literal = "[" + ",".join(str(x) for x in vec) + "]"
        await store.put_cached_embeddings(
            model, [("a" * 64, literal), ("b" * 64, "[" + ",".join(str(x) for x in other) + "]"), ("a" * 64, literal)]
        )  # a repeated text is stored once
        got = await asyncio.gather(*(store.get_cached_embedding(model, sha) for sha in ("a" * 64, "c" * 64, "b" * 64, "a" * 64)))
        assert got == [vec, None, other, vec]
    finally:
        await store.close()


async def test_completion_probe_answers_each_analysis(stack, analysis):
    aid, _ = analysis
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        # Finished analyses are not "ready to finalize" again; neither is one that does not exist.
        assert await asyncio.gather(
            store._ready_checks(aid), store._ready_checks("no-such-analysis"), store._ready_checks(aid)
        ) == [False, False, False]
        assert await store.ready_to_finalize([aid, "no-such-analysis"]) == [False, False]
    finally:
        await store.close()


async def test_retrieval_saves_and_chunk_reads_made_together_are_one_statement_each(stack, analysis):
    aid, chunks = analysis
    some = chunks[:6]
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        rows = await asyncio.gather(*(store.chunk_for_retrieval(aid, c) for c in some + ["no-such-chunk"]))
        assert all(r is not None and r.file_sha256 for r in rows[:-1]) and rows[-1] is None
        assert store._chunk_reads.batches <= 2
        hits = [{"record_id": f"r{i}", "content": 'quote " and \\ backslash', "score": 0.5} for i in range(3)]
        await asyncio.gather(
            *(
                store.save_retrieval(
                    aid,
                    c,
                    retrieval_key=f"k{i}",
                    kb_version="kb/x",
                    query={"q": i},
                    hits=hits,
                    version_id="batchv",
                    config={"limit": 5},
                    make_current=False,
                )
                for i, c in enumerate(some)
            )
        )
        assert store._retrieval_saves.batches <= 2 and store._retrieval_saves.items == len(some)
        # The six chunks' equal hits are one stored list, which their version rows name.
        (named,) = stack.sql(
            """select count(distinct hits_sha256) as lists, count(hits) as own from godot_rag.retrieval_versions
            where analysis_id = %s and version_id = 'batchv'""",
            (aid,),
        )
        assert named == {"lists": 1, "own": 0}
        for i, c in enumerate(some):
            saved = await store.get_retrieval_version(aid, c, "batchv")
            assert saved is not None and saved.query == {"q": i} and saved.hits == hits and saved.retrieval_key == f"k{i}"
            current = await store.get_retrieval(aid, c)
            assert current is not None and current.version_id != "batchv"  # make_current=False keeps the analysis's own
    finally:
        await store.close()


async def test_a_current_retrieval_keeps_its_hits_in_its_version_row_only(stack, analysis):
    """The hits (about 20 KB per chunk) are written once: the current row names its version and holds no copy,
    and every read of the current retrieval (the store's, the judge's inputs) finds them there."""
    aid, chunks = analysis
    stored = stack.sql("select count(*) as n, count(hits) as with_hits from godot_rag.retrievals where analysis_id = %s", (aid,))[0]
    assert stored["n"] == len(chunks) and stored["with_hits"] == 0
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        chunk = chunks[0]
        current = await store.get_retrieval(aid, chunk)
        assert current is not None and current.hits
        version = await store.get_retrieval_version(aid, chunk, current.version_id)
        assert version is not None and version.hits == current.hits
        inputs = await store.judge_inputs(aid, chunk)
        assert inputs is not None and inputs.hits == current.hits
        # A row without a version keeps its own hits, and reads take them.
        hits = [{"record_id": "own", "score": 1.0}]
        await store.save_retrieval(
            aid, chunk, retrieval_key="own", kb_version="kb/x", query={}, hits=hits, version_id="", config={}, make_current=True
        )
        assert (await store.get_retrieval(aid, chunk)).hits == hits
    finally:
        await store.close()


async def test_chunks_with_the_same_hits_share_one_stored_list_and_the_judge_reads_it_once(stack, analysis):
    """A scene's nodes of one type are the same search: their retrievals name one hit list, stored once;
    the judge's reads take a list they already hold from memory (the statement leaves it out)."""
    aid, _chunks = analysis
    (shared,) = stack.sql(
        """select v.hits_sha256, array_agg(v.chunk_id order by v.chunk_id) as chunk_ids
        from godot_rag.retrieval_versions v join godot_rag.retrievals r using (analysis_id, chunk_id, version_id)
        where v.analysis_id = %s group by v.hits_sha256 order by count(*) desc limit 1""",
        (aid,),
    )
    assert len(shared["chunk_ids"]) >= 2
    (counts,) = stack.sql(
        """select count(*) as retrievals, count(distinct hits_sha256) as lists, count(hits) as own
        from godot_rag.retrieval_versions where analysis_id = %s""",
        (aid,),
    )
    assert counts["own"] == 0 and counts["lists"] < counts["retrievals"]
    assert stack.sql("select count(*) as n from godot_rag.hit_lists where sha256 = %s", (shared["hits_sha256"],))[0]["n"] == 1
    # The records the lists name are stored once: fewer rows than the lists' entries.
    (named,) = stack.sql(
        """select count(*) as entries, count(distinct e->>'r') as records,
          count(distinct e->>'r') filter (where exists (select 1 from godot_rag.hit_records r where r.sha256 = e->>'r')) as stored
        from (select distinct hits_sha256 from godot_rag.retrieval_versions where analysis_id = %s) v
        join godot_rag.hit_lists l on l.sha256 = v.hits_sha256, jsonb_array_elements(l.hits) as e""",
        (aid,),
    )
    assert named["stored"] == named["records"] < named["entries"]
    first, second = shared["chunk_ids"][:2]
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        a = await store.judge_inputs(aid, first)
        b = await store.judge_inputs(aid, second)
        assert a is not None and b is not None and a.hits and a.hits_sha256 == b.hits_sha256 == shared["hits_sha256"]
        assert b.hits is a.hits  # held, not sent and parsed again
        current = await store.get_retrieval(aid, second)
        assert current is not None and current.hits == a.hits
        # A version row written before the lists keeps its own hits, and every read takes them.
        own = [{"record_id": "legacy", "score": 1.0}]
        stack.sql(
            """insert into godot_rag.retrieval_versions (analysis_id, chunk_id, version_id, retrieval_key, kb_version, query, hits)
            values (%s, %s, 'legacy-inline', 'k', 'kb/x', '{}', %s) returning 1""",
            (aid, first, Jsonb(own)),
        )
        legacy = await store.get_retrieval_version(aid, first, "legacy-inline")
        assert legacy is not None and legacy.hits == own
    finally:
        await store.close()


async def test_file_tasks_handled_together_read_in_one_statement_and_commit_in_one_transaction(stack):
    """A batch of file tasks (a project of many small files): their reads are one statement, their saves one
    transaction, and each file gets its own row, chunks, stage rows and cache entry."""
    aid = f"files-batch-{time.time_ns()}"
    contents = {f"f{i}.gd": f"extends Node\nfunc f{i}():\n\tpass\n".encode() for i in range(5)}
    files = [
        {
            "source_file": path,
            "source_kind": "gdscript",
            "included": True,
            "excluded_reason": "",
            "sha256": f"sha-{aid}-{path}",
            "size": len(data),
            "data": data,
        }
        for path, data in contents.items()
    ]
    chunk = {"span": {"start_line": 2, "end_line": 3}, "chunk_kind": "function"}
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        await store.create_analysis(
            analysis_id=aid, project_id="p", prompt="q", source_origin="test", input_ref="t", pipeline_version="v", files=files
        )
        asks = [(f["source_file"], f["sha256"]) for f in files]
        read = await asyncio.gather(
            *(store.file_task_inputs(aid, path, sha, "gdscript", "v1") for path, sha in asks),
            store.file_task_inputs(aid, "missing.gd", "sha", "gdscript", "v1"),
        )
        assert store._file_reads.batches == 1 and store._file_reads.items == len(asks) + 1
        assert [r.blob if r else None for r in read] == [*contents.values(), None]
        assert all(r is not None and r.file.source_file == path and r.cached is None for r, (path, _) in zip(read, asks))

        outputs = {
            path: {
                "source_file": path,
                "status": "ok",
                "chunks": [{**chunk, "chunk_id": f"{path}::f", "chunk_order": 0, "name": f"f{i}", "code_text": ""}],
            }
            for i, (path, _) in enumerate(asks)
        }
        await asyncio.gather(
            *(store.save_file_chunks(aid, path, outputs[path], cache_as=(sha, "gdscript", "v1")) for path, sha in asks)
        )
        assert store._file_saves.batches == 1 and store._file_saves.items == len(asks)
        saved = stack.sql(
            "select source_file, status, chunk_count from godot_rag.files where analysis_id = %s order by source_file", (aid,)
        )
        assert [(r["source_file"], r["status"], r["chunk_count"]) for r in saved] == [(p, "chunked", 1) for p, _ in asks]
        stages = stack.sql("select count(*) as n from godot_rag.chunk_stages where analysis_id = %s", (aid,))[0]["n"]
        assert stages == 2 * len(asks)  # retrieve and aggregate per chunk
        again = await asyncio.gather(*(store.file_task_inputs(aid, path, sha, "gdscript", "v1") for path, sha in asks))
        assert [r.cached if r else None for r in again] == [outputs[p] for p, _ in asks]
        assert all(r is not None and r.blob is None for r in again)

        # The judge asks each chunk's file for its declared names: the chunks of one file ask once.
        names = await asyncio.gather(*(store.file_declared_names(aid, path) for path, _ in asks + asks))
        assert names == [[f"f{i}"] for i in range(len(asks))] * 2
        assert store._declared_reads.batches == 1 and store._declared_reads.items == len(asks)
    finally:
        await store.close()


async def test_a_shaders_uniforms_are_among_the_names_its_file_declares(stack):
    """A shader is chunked in blocks: the judge of one block learns the uniforms the other blocks declare
    (`uniform sampler2D SCREEN_TEXTURE : hint_screen_texture` is the file's own name, not Godot 3's built-in)."""
    aid = f"shader-names-{time.time_ns()}"
    path, data = "fx/screen.gdshader", b"shader_type canvas_item;\n\nuniform sampler2D SCREEN_TEXTURE : hint_screen_texture;\n"
    files = [
        {
            "source_file": path,
            "source_kind": "shader",
            "included": True,
            "excluded_reason": "",
            "sha256": f"sha-{aid}",
            "size": len(data),
            "data": data,
        }
    ]
    blocks = [
        ("1", "shader_type canvas_item;"),
        ("3", "uniform sampler2D SCREEN_TEXTURE : hint_screen_texture;"),
        ("5", "void fragment() {\n\tCOLOR = texture(SCREEN_TEXTURE, SCREEN_UV);\n}"),
    ]
    output = {
        "source_file": path,
        "status": "ok",
        "chunks": [
            {
                "chunk_id": f"{path}:block:{name}",
                "chunk_order": order,
                "chunk_kind": "block",
                "name": name,
                "code_text": text,
                "span": {"start_line": int(name), "end_line": int(name) + text.count("\n")},
            }
            for order, (name, text) in enumerate(blocks)
        ],
    }
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        await store.create_analysis(
            analysis_id=aid, project_id="p", prompt="q", source_origin="test", input_ref="t", pipeline_version="v", files=files
        )
        await store.save_file_chunks(aid, path, output, cache_as=(f"sha-{aid}", "shader", "v1"))
        assert await store.file_declared_names(aid, path) == ["SCREEN_TEXTURE"]
    finally:
        await store.close()
