"""Knowledge base and hybrid retrieval on the real stack: PostgreSQL with pgvector/pg_trgm,
the in-process all-MiniLM-L6-v2, the retriever service over gRPC."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import psycopg
import pytest
from psycopg.rows import dict_row

from godot_rag import convert
from godot_rag.domain.chunking.files import chunk_file
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.ingest.policy import classify_path
from godot_rag.domain.retrieval.query import build_embedding_text, build_retriever_query
from godot_rag.domain.retrieval.search import Search
from godot_rag.infra import kb_store
from godot_rag.infra.embedder import MINILM_MODEL, EmbeddingModelMismatch, MiniLMEmbedder, TEIEmbedder, check_model, text_sha256
from godot_rag.infra.store import Store
from godot_rag.pipeline.kb import build_kb, data_version, kb_is_current
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc

PROMPT = "Is this Godot 3 or Godot 4, and what is the basis for converting it?"


@pytest.fixture(scope="module")
def dsn(stack):
    return stack.runtime["pg_dsn"]


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder()


def query_for(source: str, path: str, name: str, prompt: str = PROMPT):
    chunk = next(c for c in parse_gdscript(path, source.encode()).chunks if c.name == name)
    return build_retriever_query(prompt=prompt, chunk=chunk)


def search(dsn, query, vector, limit=5, tables=kb_store.TABLES):
    async def run():
        async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as conn:
            return await kb_store.search(conn, query, tables=tables, limit_per_table=limit, query_embedding=vector)

    return asyncio.run(run())


def test_kb_is_built_with_vectors_indexes_and_version(stack, dsn):
    row = stack.sql("select * from godot_rag.kb_versions where name = 'current'")[0]
    assert row["embedding_model"] == MINILM_MODEL and row["embedding_dim"] == 384
    assert row["data_version"] == data_version()
    counts = {
        r["t"]: r["n"]
        for r in stack.sql(
            "select 'docs' t, count(*) n from godot_rag.docs_chunks union all select 'map', count(*) from godot_rag.api_mapping "
            "union all select 'proto', count(*) from godot_rag.label_prototypes"
        )
    }
    assert counts["docs"] > 38000 and counts["map"] > 1687 and counts["proto"] >= 60
    vec = {
        r["id"]: r["v"]
        for r in stack.sql(
            "select id, embedding is not null as v from godot_rag.docs_chunks where id in "
            "('docs:4:CharacterBody2D', 'docs:4:CharacterBody2D.move_and_slide')"
        )
    }
    assert vec == {"docs:4:CharacterBody2D": True, "docs:4:CharacterBody2D.move_and_slide": False}
    assert stack.sql("select count(*) n from godot_rag.api_mapping where embedding is null")[0]["n"] == 0
    assert stack.sql("select count(*) n from godot_rag.api_mapping where payload->>'enabled' = 'false'")[0]["n"] == 88
    indexes = {
        r["indexname"]: r["indexdef"]
        for r in stack.sql("select indexname, indexdef from pg_indexes where schemaname = 'godot_rag'")
    }
    for table in kb_store.TABLES:
        # Both searches run in the retriever (migrations 0021 and 0023): no index but the key's.
        assert {name for name in indexes if name.startswith(f"{table}_")} <= {f"{table}_pkey", f"{table}_old"}
    view_cols = [
        r["column_name"]
        for r in stack.sql(
            "select column_name from information_schema.columns where table_schema = 'godot_rag' "
            "and table_name = 'dynamic_retrieval_view' order by ordinal_position"
        )
    ]
    assert view_cols[:8] == ["table_name", "id", "title", "content", "embedding", "search_text", "search_tsv", "metadata"]


def test_rebuild_is_idempotent(dsn, embedder):
    assert kb_is_current(dsn, embedder)
    assert build_kb(dsn, embedder=embedder) is None
    report = build_kb(dsn, embedder=embedder, force=True)
    assert report["vectors_embedded"] == 0  # every vector came back from the cache
    with psycopg.connect(dsn) as conn:
        n = conn.execute("select count(*) from godot_rag.api_mapping").fetchone()[0]
    assert n == report["api_mapping"]
    assert kb_is_current(dsn, embedder)


def test_another_model_is_a_clear_error(stack):
    kb_model = stack.sql("select embedding_model from godot_rag.kb_versions")[0]["embedding_model"]
    check_model(kb_model, MINILM_MODEL)
    check_model(kb_model, None)  # lexical-only by configuration
    with pytest.raises(EmbeddingModelMismatch, match="rebuild it with `godot-rag kb build --force`"):
        check_model(kb_model, "BAAI/bge-small-en-v1.5")
    with pytest.raises(EmbeddingModelMismatch, match="built without vectors"):
        check_model("none", MINILM_MODEL)


def test_renamed_godot3_class_finds_its_mapping_docs_and_prototype(dsn, embedder):
    source = (
        "extends KinematicBody2D\n\nvar velocity = Vector2()\n\nfunc _physics_process(delta):\n"
        "\tvelocity.y += 20\n\tvelocity = move_and_slide(velocity, Vector2.UP)\n"
    )
    q = query_for(source, "player.gd", "_physics_process")
    hits = search(dsn, q, embedder.embed([build_embedding_text(q)])[0])
    ids = {h.table_name: [x.record_id for x in hits if x.table_name == h.table_name] for h in hits}
    assert "change:move-and-slide" in ids["api_mapping"][:3]
    assert "proto:g3-kinematic-move" in ids["label_prototypes"]
    top = next(h for h in hits if h.record_id == "change:move-and-slide")
    assert set(top.component_scores) >= {"vector", "keys", "text", "trigram"} and top.component_scores["keys"] > 0
    q2 = query_for(source, "player.gd", "1")
    hits2 = search(dsn, q2, embedder.embed([build_embedding_text(q2)])[0])
    assert [h.record_id for h in hits2 if h.table_name == "api_mapping"][0] == "rename:class_renames:KinematicBody2D"
    assert "docs:3:KinematicBody2D" in [h.record_id for h in hits2 if h.table_name == "docs_chunks"][:3]


def test_identical_chunks_in_different_files_get_identical_hits(dsn, embedder):
    source = 'func _ready():\n\tyield(get_tree().create_timer(1.0), "timeout")\n\tqueue_free()\n'
    qa = query_for(source, "scenes/a/enemy.gd", "_ready")
    qb = query_for("extends Node2D\n\nvar hp = 3\n\n\n" + source, "zzz/b/boss_final.gd", "_ready")
    assert qa == qb
    hits_a = search(dsn, qa, embedder.embed([build_embedding_text(qa)])[0])
    hits_b = search(dsn, qb, embedder.embed([build_embedding_text(qb)])[0])
    assert [(h.table_name, h.record_id, h.score) for h in hits_a] == [(h.table_name, h.record_id, h.score) for h in hits_b]
    assert "change:yield-await" in [h.record_id for h in hits_a]


def test_retriever_service_search_embeds_caches_and_returns_components(stack):
    stub = stack.stub("retriever", sgrpc.RetrieverStub)
    q = query_for(
        'func _ready():\n\tvar f = File.new()\n\tf.open("user://a.txt", File.READ)\n',
        "io.gd",
        "_ready",
        prompt="Muss das in Godot 4 konvertiert werden?",
    )
    resp = stub.Search(spb.SearchRequest(query=convert.query_to_pb(q), limit_per_table=3), timeout=120)
    assert resp.kb_version.endswith("/" + MINILM_MODEL)
    tables = [h.table for h in resp.hits]
    assert tables[0] == "api_mapping"  # migration intent: api_mapping first
    assert sum(1 for t in tables if t == "api_mapping") <= 3
    assert "change:file-class" in [h.record_id for h in resp.hits if h.table == "api_mapping"]
    assert all({"keys", "text", "trigram"} <= set(h.component_scores) for h in resp.hits)
    # api_mapping and prototypes all carry vectors; class-reference members are lexical-only.
    assert all("vector" in h.component_scores for h in resp.hits if h.table != "docs_chunks")
    sha = text_sha256(build_embedding_text(q))

    def cached() -> int:
        sql = "select count(*) n from godot_rag.embedding_cache where model = %s and text_sha256 = %s"
        return stack.sql(sql, (MINILM_MODEL, sha))[0]["n"]

    # The vector is cached after the answer (the write is for later analyses): it lands within moments.
    deadline = time.monotonic() + 15
    while cached() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cached() == 1
    with pytest.raises(grpc.RpcError) as err:
        stub.Search(spb.SearchRequest(query=convert.query_to_pb(replace(q, query_terms=(), raw_chunk_text=""))), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_scene_node_is_found_by_its_type_without_a_query_vector(stack):
    """A direct chunk (here a Godot 3 scene node) is searched by its candidates: no vector is made or
    cached for it, no hit carries a vector score, and its node type finds the rename and the class page."""
    stub = stack.stub("retriever", sgrpc.RetrieverStub)
    source = (
        '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://player.gd" type="Script" id=1]\n\n'
        '[node name="Player" type="KinematicBody2D"]\nscript = ExtResource( 1 )\n'
    )
    chunk = next(
        c
        for c in chunk_file("player.tscn", classify_path("player.tscn")[0], source.encode()).chunks
        if c.chunk_id == "player.tscn:node:Player"
    )
    q = build_retriever_query(prompt=PROMPT, chunk=chunk)
    assert q.direct_chunk
    resp = stub.Search(spb.SearchRequest(query=convert.query_to_pb(q), limit_per_table=5), timeout=120)
    assert [h.record_id for h in resp.hits if h.table == "api_mapping"][0] == "rename:class_renames:KinematicBody2D"
    assert "docs:3:KinematicBody2D" in [h.record_id for h in resp.hits if h.table == "docs_chunks"][:2]
    assert resp.hits and not any("vector" in h.component_scores for h in resp.hits)
    sha = text_sha256(build_embedding_text(q))
    assert stack.sql("select count(*) n from godot_rag.embedding_cache where text_sha256 = %s", (sha,))[0]["n"] == 0


def yield_query_and_vector(embedder):
    """A Godot 3 ``yield`` function's query and its vector (found by change:yield-await)."""
    source = 'func _ready():\n\tyield(get_tree().create_timer(1.0), "timeout")\n\tqueue_free()\n'
    q = query_for(source, "enemy.gd", "_ready")
    return q, embedder.embed([build_embedding_text(q)])[0]


def test_the_store_searches_over_the_indexes_it_holds_and_finds_what_a_search_with_a_connection_finds(dsn, embedder):
    """Store.search with a knowledge-base version loads the records' index once, ranks in the process and
    asks the database only for content it has not read; a plain search finds the same hits."""
    q, vector = yield_query_and_vector(embedder)

    async def run():
        store = await Store.open(dsn, max_size=2)
        try:
            label = "v1/" + MINILM_MODEL
            hits = await store.search(q, tables=kb_store.TABLES, limit_per_table=5, query_embedding=vector, kb_version=label)
            index = await store.lexical_index(label)
            again = await store.search(q, tables=kb_store.TABLES, limit_per_table=5, query_embedding=vector, kb_version=label)
            return hits, again, index, await store.lexical_index(label), await store.lexical_index("v2/" + MINILM_MODEL)
        finally:
            await store.close()

    hits, again, index, held, other = asyncio.run(run())
    assert held is index and other is not index  # one load per version
    assert len(index) == kb_stack_sql(dsn, "select count(*) n from godot_rag.dynamic_retrieval_view")[0]["n"]
    expected = search(dsn, q, vector)
    assert hits == again == expected
    assert "change:yield-await" in [h.record_id for h in hits]


def test_the_vector_candidates_are_the_exact_cosine_neighbours_and_load_once_per_version(dsn, embedder):
    source = "func _physics_process(delta):\n\tvelocity = move_and_slide(velocity, Vector2.UP)\n"
    vector = embedder.embed([build_embedding_text(query_for(source, "player.gd", "_physics_process"))])[0]
    literal = "[" + ",".join(repr(x) for x in vector) + "]"

    async def run():
        store = await Store.open(dsn, max_size=2)
        try:
            version = await store.kb_version()
            assert version is not None
            label = f"{version.data_version}/{version.embedding_model}"
            index = await store.vector_index(label)
            again = await store.vector_index(label)
            return label, index, again
        finally:
            await store.close()

    label, index, again = asyncio.run(run())
    assert again is index and index.version == label  # held, not loaded per search
    counts = {
        r["table_name"]: r["n"]
        for r in kb_stack_sql(
            dsn,
            "select table_name, count(*) n from godot_rag.dynamic_retrieval_view where embedding is not null group by table_name",
        )
    }
    assert len(index) == sum(counts.values()) > 4000
    for table in kb_store.TABLES:
        exact = [
            r["id"]
            for r in kb_stack_sql(
                dsn,
                f"select id from godot_rag.{table} where embedding is not null order by embedding <=> '{literal}'::vector, id limit 20",
            )
        ]
        found = index.nearest(table, vector, 20)
        # float32 sums in another order: a pair closer than rounding may swap, nothing else moves.
        assert set(found[:15]) <= set(exact) and len(set(found) & set(exact)) >= 19, table


def test_records_read_once_answer_later_searches_alike_and_a_new_version_starts_afresh(dsn, embedder):
    q, vector = yield_query_and_vector(embedder)

    async def run():
        store = await Store.open(dsn, max_size=2)
        try:
            first = await store.search(q, tables=kb_store.TABLES, limit_per_table=5, query_embedding=vector, kb_version="v1/m")
            held = store._held_for("v1/m")
            kept = len(held.details)
            # A stand-in entry shows that the second search takes the held record instead of reading it.
            marked = (first[0].table_name, first[0].record_id)
            held.details.put(marked, {"content": "held", "metadata": {}})
            second = await store.search(q, tables=kb_store.TABLES, limit_per_table=5, query_embedding=vector, kb_version="v1/m")
            fresh = await store.search(q, tables=kb_store.TABLES, limit_per_table=5, query_embedding=vector, kb_version="v2/m")
            return first, kept, second, fresh
        finally:
            await store.close()

    first, kept, second, fresh = asyncio.run(run())
    assert kept == len({(h.table_name, h.record_id) for h in first}) > 0
    assert second[0].content == "held" and [h.record_id for h in second] == [h.record_id for h in first]
    assert fresh == first  # another version: read again, nothing of the last one reused
    assert first == search(dsn, q, vector)  # what a search without held records finds


def import_query(path: str, source: str):
    chunk = chunk_file(path, classify_path(path)[0], source.encode()).chunks[-1]
    return build_retriever_query(prompt=PROMPT, chunk=chunk)


IMPORT = """[remap]

importer="texture"
type="StreamTexture"
path="res://.import/{name}.png-{digest}.stex"

[params]

compress/mode=0
flags/repeat={repeat}
flags/filter={filter}
process/fix_alpha_border=true
detect_3d=true
"""


def test_chunks_whose_searches_are_the_same_share_one_search_and_get_what_a_fresh_search_finds(dsn, embedder):
    """Two import files with the same keys and other values are two queries and one search: the second is
    answered from the first (no ranking, no read) with the hits a search with a connection finds for it.
    A search with a vector (a script chunk's) is not kept: a repeated one is a repeated query, answered before."""
    first_q = import_query("a.png.import", IMPORT.format(name="a", digest="0" * 32, repeat="false", filter="true"))
    other_q = import_query("b/c.png.import", IMPORT.format(name="c", digest="f" * 32, repeat="true", filter="false"))
    assert first_q.direct_chunk and first_q != other_q
    assert Search.of(first_q, tables=kb_store.TABLES, limit_per_table=5) == Search.of(
        other_q, tables=kb_store.TABLES, limit_per_table=5
    )
    q, vector = yield_query_and_vector(embedder)

    async def run():
        store = await Store.open(dsn, max_size=2)
        try:
            first = await store.search(first_q, tables=kb_store.TABLES, limit_per_table=5, kb_version="v1/m")
            other = await store.search(other_q, tables=kb_store.TABLES, limit_per_table=5, kb_version="v1/m")
            held = store._held_for("v1/m")
            direct = (held.searches.hits, held.searches.misses)
            await store.search(q, tables=kb_store.TABLES, limit_per_table=5, query_embedding=vector, kb_version="v1/m")
            await store.search(q, tables=kb_store.TABLES, limit_per_table=5, query_embedding=vector, kb_version="v1/m")
            return first, other, direct, (held.searches.hits, held.searches.misses, len(held.searches))
        finally:
            await store.close()

    first, other, direct, scripts = asyncio.run(run())
    assert direct == (1, 1) and other is first
    assert first and other == search(dsn, other_q, None)
    assert scripts == (1, 1, 1)


def kb_stack_sql(dsn: str, sql: str) -> list[dict]:
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return list(conn.execute(sql).fetchall())


def test_minilm_vectors_are_real_and_normalised(embedder):
    a, b, c = embedder.embed(["extends KinematicBody2D", "extends KinematicBody2D", "Tween interpolate_property"])
    assert len(a) == 384 and a == b
    assert abs(sum(x * x for x in a) - 1.0) < 1e-4
    assert sum(x * y for x, y in zip(a, c)) < 0.9


class _TEIHandler(BaseHTTPRequestHandler):
    """text-embeddings-inference's /info and /embed, answered with the real MiniLM model."""

    model = MiniLMEmbedder()

    def do_GET(self):
        self._send({"model_id": MINILM_MODEL, "max_client_batch_size": 32})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["inputs"] if isinstance(body["inputs"], list) else [body["inputs"]]
        self._send(self.model.embed(inputs))

    def _send(self, payload):
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_tei_client_speaks_the_embed_api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TEIHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        tei = TEIEmbedder(f"http://127.0.0.1:{server.server_address[1]}", batch_size=2)
        assert tei.name == MINILM_MODEL
        texts = ["extends Node2D", 'yield(get_tree(), "idle_frame")', "OS.window_fullscreen = true"]
        got = tei.embed(texts)
        want = _TEIHandler.model.embed(texts)
        assert len(got) == 3 and all(abs(x - y) < 1e-6 for g, w in zip(got, want) for x, y in zip(g, w))
    finally:
        server.shutdown()
        server.server_close()


def test_the_model_loads_only_when_used(repo):
    """Importing the retriever, the KB builder and the embedder, and checking the shipped vectors' model, load no torch."""
    code = (
        "import sys\n"
        "import services.retriever.main, services.retriever.consumer, godot_rag.pipeline.kb, godot_rag.cli\n"
        "from godot_rag.infra.embedder import MiniLMEmbedder\n"
        "from godot_rag.pipeline.kb import read_shipped_vectors\n"
        "m = MiniLMEmbedder()\n"
        "assert len(read_shipped_vectors(m)) > 4000\n"
        "assert not m.loaded and 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules\n"
        "m.embed(['extends Node'])\n"
        "assert m.loaded and ('onnxruntime' in sys.modules or 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
