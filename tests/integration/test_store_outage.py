"""A database that cannot be reached is an outage (StoreError, retryable), never a bare driver error."""

from __future__ import annotations

import pytest
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from godot_rag.domain.models import RetrieverQuery
from godot_rag.errors import OutageError, PoisonError, StoreError
from godot_rag.infra.store import Store


async def unreachable_store(socket_dir) -> Store:
    """A store on a socket folder where no server listens: what the services see while PostgreSQL restarts."""
    pool = AsyncConnectionPool(
        f"postgresql://postgres:@/postgres?host={socket_dir}",
        min_size=1,
        max_size=1,
        open=False,
        timeout=1,
        kwargs={"row_factory": dict_row, "connect_timeout": 1},
    )
    await pool.open(wait=False)
    return Store(pool)


async def test_an_unreachable_database_raises_a_retryable_store_error(tmp_path):
    store = await unreachable_store(tmp_path)
    try:
        with pytest.raises(StoreError) as caught:
            await store.get_analysis("a1")
        assert isinstance(caught.value, OutageError)  # the bus waits it out instead of spending a delivery
    finally:
        await store.close()


async def test_a_search_against_an_unreachable_database_is_an_outage(tmp_path):
    """The search's own pool opens on the first search: during an outage that is a retryable StoreError too."""
    store = await unreachable_store(tmp_path)
    try:
        query = RetrieverQuery(query_text="Timer", query_terms=("Timer",), raw_chunk_text="var t = Timer.new()")
        with pytest.raises(StoreError) as caught:
            await store.search(query, tables=("api_mapping",), limit_per_table=3)
        assert isinstance(caught.value, OutageError)
    finally:
        await store.close()


async def test_a_statement_past_a_database_limit_is_poison_not_an_outage(stack):
    """PostgreSQL refuses a tsquery word over its limit (program_limit_exceeded, an OperationalError):
    the same statement fails the same way on every delivery, so it must be dead-lettered, not waited out."""
    store = await Store.open(stack.runtime["pg_dsn"], max_size=1)
    try:
        with pytest.raises(PoisonError) as caught:
            await store._fetchone("select %s::tsquery as q", ("'" + "a" * 3000 + "'",))
        assert not isinstance(caught.value, OutageError)
        assert "ProgramLimitExceeded" in str(caught.value)
        # The connection went back to the pool in a usable state.
        assert (await store._fetchone("select 1 as one"))["one"] == 1
    finally:
        await store.close()
