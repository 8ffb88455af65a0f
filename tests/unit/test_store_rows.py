"""The store's typed rows: built from exactly their columns, refused otherwise, and in step with the schema."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

import pytest

from godot_rag.errors import RowShapeError
from godot_rag.infra import rows
from godot_rag.infra.store import migration_files

T0 = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)


def _values(row_type: type[rows.Row]) -> dict:
    """A distinct value per column (a datetime for the timestamp columns)."""
    return {
        name: T0 if name.endswith("_at") or name in ("now", "cursor", "first_done", "last_done") else f"v-{name}"
        for name in row_type.columns()
    }


@pytest.mark.parametrize("row_type", rows.ROW_TYPES, ids=lambda t: t.__name__)
def test_a_row_is_built_from_exactly_its_columns(row_type):
    values = _values(row_type)
    row = row_type.from_row(values)
    assert row.to_dict() == values
    assert [getattr(row, name) for name in row_type.columns()] == list(values.values())
    assert row_type.columns() == tuple(f.name for f in dataclasses.fields(row_type))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(row, row_type.columns()[0], "changed")
    assert not hasattr(row, "__dict__")  # slots: no per-row dict


@pytest.mark.parametrize("row_type", rows.ROW_TYPES, ids=lambda t: t.__name__)
def test_a_missing_or_unexpected_column_is_refused_by_name(row_type):
    values = _values(row_type)
    first = row_type.columns()[0]
    with pytest.raises(RowShapeError, match=rf"{row_type.__name__}.*missing: {first}; unexpected: -"):
        row_type.from_row({k: v for k, v in values.items() if k != first})
    with pytest.raises(RowShapeError, match=r"missing: -; unexpected: added_later"):
        row_type.from_row(values | {"added_later": 1})


def test_to_json_writes_datetimes_as_iso_text_and_keeps_json_values():
    stage = rows.StageRow("judge", "done", 2, "", "judge-1", "abc", None, T0)
    assert stage.to_json() == {
        "stage": "judge",
        "status": "done",
        "attempts": 2,
        "last_error": "",
        "worker": "judge-1",
        "trace_id": "abc",
        "started_at": None,
        "updated_at": "2026-01-01T12:30:00+00:00",
    }
    hits = [{"record_id": "r1", "component_scores": {"keys": 1.0}}]
    retrieval = rows.RetrievalRow("a1", "c1", "r-1", "key", "kb/lexical", {"query_text": "x"}, hits, T0)
    assert retrieval.to_json()["hits"] is hits and retrieval.to_dict()["created_at"] is T0


def test_select_list_names_the_columns_in_field_order():
    assert rows.LatestAnalysis.select_list() == "analysis_id, created_at"
    assert rows.LatestAnalysis.select_list("a") == "a.analysis_id, a.created_at"


def _schema() -> dict[str, set[str]]:
    """Table -> columns, as the migrations build them (create table, then add column)."""
    tables: dict[str, set[str]] = {}
    for _version, _name, sql in migration_files():
        sql = re.sub(r"--[^\n]*", "", sql)
        for table, body in re.findall(r"create table (?:if not exists )?godot_rag\.(\w+) \((.*?)\n\);", sql, re.S):
            names = {line.split()[0] for line in body.splitlines() if line.strip()}
            tables[table] = names - {"primary", "foreign", "unique", "constraint"}
        for table, body in re.findall(r"alter table godot_rag\.(\w+)(.*?);", sql, re.S):
            tables.setdefault(table, set()).update(re.findall(r"add column (?:if not exists )?(\w+)", body))
    return tables


# Row types read from one table: the table's columns they leave out.
WHOLE_TABLE = [
    (rows.AnalysisRow, "analyses", set()),
    (rows.KbVersionRow, "kb_versions", set()),
    (rows.FileRow, "files", {"symbol_scope"}),  # each script's slice of the project index: read apart
    (rows.ChunkRow, "chunks", set()),
    (rows.RetrievalRow, "retrievals", set()),
    (rows.RetrievalRow, "retrieval_versions", {"hits_sha256"}),  # the hit list's name: read through hit_lists
    (rows.VerdictRow, "verdicts", set()),
    (rows.VerdictRow, "verdict_versions", {"version_id"}),
    (rows.DeadLetterRow, "dead_letters", set()),
    (rows.ReplayRow, "replays", set()),
    (rows.ReplayChunkRow, "replay_chunks", set()),
]


@pytest.mark.parametrize("row_type,table,left_out", WHOLE_TABLE, ids=lambda x: getattr(x, "__name__", str(x)))
def test_a_table_row_type_matches_the_migrated_table(row_type, table, left_out):
    columns = _schema()[table]
    assert set(row_type.columns()) == columns - left_out


def test_the_schema_reader_sees_added_columns():
    schema = _schema()
    assert {"chunks_reused", "symbol_scope"} <= schema["files"]
    assert {"version_id", "route", "cached"} <= schema["judgments"]


@pytest.mark.parametrize(
    "row_type,table",
    [(rows.StageRow, "chunk_stages"), (rows.JudgmentRow, "judgments"), (rows.ResultVersionRow, "result_versions")],
    ids=lambda x: getattr(x, "__name__", str(x)),
)
def test_a_row_type_read_from_part_of_a_table_names_only_its_columns(row_type, table):
    extra = {"label", "confidence", "counts", "basis"} if row_type is rows.ResultVersionRow else set()
    assert set(row_type.columns()) - extra <= _schema()[table]
