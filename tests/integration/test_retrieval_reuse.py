"""A retrieval is reused by its key across analyses, on real PostgreSQL: the stored hits answer the same query
without a vector or a search; without reuse (a replay) it searches again."""

from __future__ import annotations

import shutil

from godot_rag import convert
from godot_rag.infra.embedder import embedder_from_settings
from godot_rag.infra.store import Store
from godot_rag.pipeline.retrieval import KbVersionCache, QueryEmbedder, retrieval_key, retrieve
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb

PROMPT = "Reuse check: is this project Godot 3 or Godot 4?"


def analyze(stack, folder) -> str:
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=PROMPT, path=str(folder)), timeout=120)
    last = None
    for progress in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=300):
        last = progress
    assert last is not None and last.status == "done", last
    return submitted.analysis_id


async def test_a_stored_retrieval_answers_the_same_query_and_without_reuse_it_searches_again(stack, repo, tmp_path):
    folder = tmp_path / "project"
    shutil.copytree(repo / "samples" / "godot4_project", folder)
    aid = analyze(stack, folder)
    (row,) = stack.sql(
        """select v.retrieval_key, v.query, godot_rag.expand_hits(l.hits) as hits, v.hits_sha256, r.config
        from godot_rag.retrieval_versions v
        join godot_rag.hit_lists l on l.sha256 = v.hits_sha256
        join godot_rag.result_versions r on r.analysis_id = v.analysis_id and r.version_id = v.version_id
        where v.analysis_id = %s and jsonb_array_length(l.hits) > 1 order by v.chunk_id limit 1""",
        (aid,),
    )
    key, limit = row["retrieval_key"], row["config"]["limit_per_table"]
    stack.sql(
        "update godot_rag.hit_lists set hits = jsonb_set(hits, '{0,score}', '0.123456') where sha256 = %s returning 1",
        (row["hits_sha256"],),
    )
    settings = stack.supervisor.settings
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        backend = embedder_from_settings(settings, query_time=True)
        assert backend is not None
        embedder = QueryEmbedder(backend, store)
        kb = KbVersionCache(store)
        query = convert.query_from_pb(convert.from_dict(row["query"], pb.RetrieverQuery))
        version = await kb.get()
        assert version is not None
        assert retrieval_key(query, f"{version.data_version}/{version.embedding_model}", limit) == key

        reused, _ = await retrieve(store, kb, query, limit, embedder, cache=None, reuse=True)
        assert reused[0].score == 0.123456  # the stored hits, not a new search
        assert [h.record_id for h in reused] == [h["record_id"] for h in row["hits"]]
        assert not backend.loaded  # no query vector was made

        searched, _ = await retrieve(store, kb, query, limit, embedder, cache=None, reuse=False)
        assert searched[0].score != 0.123456 and searched[0].record_id == reused[0].record_id
    finally:
        await store.close()


async def test_the_warm_up_loads_the_query_model_and_the_indexes_the_first_search_reads(stack):
    from types import SimpleNamespace

    from godot_rag.pipeline.retrieval import RetrieveStage

    settings = stack.supervisor.settings
    store = await Store.open(stack.runtime["pg_dsn"])
    try:
        backend = embedder_from_settings(settings, query_time=True)
        assert backend is not None and not backend.loaded
        stage = RetrieveStage(SimpleNamespace(store=store, settings=settings), QueryEmbedder(backend, store))  # type: ignore[arg-type]
        await stage.warm_up()
        version = await KbVersionCache(store).get()
        assert version is not None
        held = store._kb_held
        assert held is not None and held.version == f"{version.data_version}/{version.embedding_model}"
        assert held.lexical is not None and len(held.lexical) > 40_000
        assert held.vectors is not None and len(held.vectors) > 4_000
        assert backend.loaded
        # The first search reads what the warm-up loaded: the same index objects, not a second load.
        lexical = held.lexical
        query = convert.query_from_pb(
            pb.RetrieverQuery(query_text="KinematicBody2D move_and_slide", query_terms=["KinematicBody2D"])
        )
        hits, kb_version = await stage.search(query, 5)
        assert hits and kb_version == held.version and store._kb_held is held and held.lexical is lexical
    finally:
        await store.close()
