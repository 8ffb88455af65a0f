"""Building the knowledge base from the shipped data."""

from __future__ import annotations

import logging
from typing import Callable

from godot_rag.domain.knowledge import (
    KB_DATA_VERSION,
    KnowledgeRecord,
    class_reference_names,
    read_jsonl_gz,
    rename_records,
)
from godot_rag.infra.kb_store import kb_version_sync, load_knowledge_sync

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (phase, done, total)


def knowledge_records(progress: Progress | None = None) -> list[KnowledgeRecord]:
    report = progress or (lambda phase, done, total: None)
    report("reading Godot 3.6 class reference", 0, 3)
    godot3 = class_reference_names(read_jsonl_gz("godot3_class_reference.jsonl.gz"))
    report("reading Godot 4.4.1 class reference", 1, 3)
    godot4 = class_reference_names(read_jsonl_gz("godot4_class_reference.jsonl.gz"))
    report("reading the 3->4 rename pairs", 2, 3)
    records = rename_records(read_jsonl_gz("godot_renames_3to4.jsonl.gz"), godot3, godot4)
    report("records ready", 3, 3)
    return records


def kb_is_current(dsn: str, embedding_model: str = "none") -> bool:
    row = kb_version_sync(dsn)
    return row is not None and row["data_version"] == KB_DATA_VERSION and row["embedding_model"] == embedding_model


def build_kb(dsn: str, *, force: bool = False, progress: Progress | None = None) -> dict[str, int] | None:
    """Load the KB idempotently; returns record counts, or None when it was already current."""
    if not force and kb_is_current(dsn):
        return None
    records = knowledge_records(progress)
    counts = load_knowledge_sync(dsn, records, data_version=KB_DATA_VERSION, embedding_model="none")
    log.info("knowledge base %s loaded: %s", KB_DATA_VERSION, counts)
    return counts
