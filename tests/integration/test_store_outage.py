"""A database that cannot be reached is an outage (StoreError, retryable), never a bare driver error."""

from __future__ import annotations

import pytest
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from godot_rag.errors import OutageError, StoreError
from godot_rag.infra.store import Store


async def test_an_unreachable_database_raises_a_retryable_store_error(tmp_path):
    # A socket folder where no server listens: what the services see while PostgreSQL restarts.
    pool = AsyncConnectionPool(f"postgresql://postgres:@/postgres?host={tmp_path}", min_size=1, max_size=1, open=False,
                               timeout=1, kwargs={"row_factory": dict_row, "connect_timeout": 1})
    await pool.open(wait=False)
    store = Store(pool)
    try:
        with pytest.raises(StoreError) as caught:
            await store.get_analysis("a1")
        assert isinstance(caught.value, OutageError)  # the bus waits it out instead of spending a delivery
    finally:
        await store.close()
