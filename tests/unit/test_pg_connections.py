"""How many connections the embedded PostgreSQL allows: every service pool at its largest, and spare ones."""

from __future__ import annotations

from godot_rag.settings import load_settings
from godot_rag.supervisor import SPARE_PG_CONNECTIONS, pg_connections_needed


def test_the_default_stack_fits_postgresqls_default():
    settings = load_settings({"GODOT_RAG_RETRIEVER_WORKERS": "2"})
    assert pg_connections_needed(settings) == 100
    # Five stages (two retriever processes, the default on two cores or more), the gateway and
    # each retriever's search pool, eight connections each.
    assert 9 * settings.pg_pool_size + SPARE_PG_CONNECTIONS <= 100


def test_more_workers_get_room_for_every_pool():
    four = load_settings({"GODOT_RAG_STAGE_WORKERS": "4"})
    # 4 x 5 stage processes + the gateway + 4 retriever search pools = 25 pools of 8 (the stack that ran out at 100).
    assert pg_connections_needed(four) == 25 * 8 + SPARE_PG_CONNECTIONS
    wide = load_settings({"GODOT_RAG_RETRIEVER_WORKERS": "3", "GODOT_RAG_PG_POOL_SIZE": "16"})
    assert pg_connections_needed(wide) == (4 + 3 + 1 + 3) * 16 + SPARE_PG_CONNECTIONS
