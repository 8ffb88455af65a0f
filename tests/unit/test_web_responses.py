"""The web screen's query parameters and answers: JSON text and the live feed's server-sent events."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from godot_rag.pipeline.web_requests import (
    diff_form,
    json_default,
    live_events,
    min_score_of,
    since_of,
    sse_message,
    to_json_text,
)


def test_min_score_is_clamped_and_tolerates_junk():
    assert min_score_of({}) == 0.0
    assert min_score_of({"min": "0.4"}) == 0.4
    assert min_score_of({"min": "7"}) == 1.0
    assert min_score_of({"min": "-1"}) == 0.0
    assert min_score_of({"min": "abc"}) == 0.0


def test_diff_form_shows_changed_chunks_only_on_a_first_visit():
    assert diff_form({})["changed"] is True
    assert diff_form({"a": " x ", "b": "y"}) == {"a": "x", "b": "y", "analysis": "", "changed": False}
    assert diff_form({"a": "x", "b": "y", "changed": "1"})["changed"] is True


def test_since_reads_iso_timestamps_and_drops_junk():
    assert since_of("") is None and since_of("yesterday") is None
    assert since_of("2026-12-01T10:00:00+00:00") == datetime(2026, 12, 1, 10, tzinfo=UTC)


def test_json_text_writes_datetimes_sets_and_keeps_unicode():
    when = datetime(2026, 12, 1, tzinfo=UTC)
    assert to_json_text({"t": when, "s": ("a",), "u": "ü"}) == '{"t": "2026-12-01T00:00:00+00:00", "s": ["a"], "u": "ü"}'
    with pytest.raises(TypeError):
        json_default(object())


def test_an_event_carries_the_cursor_as_its_id():
    when = datetime(2026, 12, 1, tzinfo=UTC)
    assert sse_message("end", {"status": "done"}, when) == (
        b'event: end\nid: 2026-12-01T00:00:00+00:00\ndata: {"status": "done"}\n\n'
    )
    assert sse_message("end", {}, None) == b"event: end\ndata: {}\n\n"


def _batch(**over):
    base = {"chunks": [], "files": [], "running": True, "counts": {"done": 1}, "status": "running", "progress": {"chunks_done": 1}}
    return {**base, **over}


def test_live_events_send_changes_then_progress_and_nothing_when_idle():
    chunk = {"chunk_id": "c1", "order_key": "a.gd:1", "status": "done"}
    events = live_events(
        _batch(chunks=[chunk], files=[{"source_file": "a.gd"}]), lambda v: f"<tr>{v['chunk_id']}", lambda e: "<li>"
    )
    assert [name for name, _ in events] == ["chunks", "files", "progress"]
    assert events[0][1] == [{"id": "c1", "order": "a.gd:1", "status": "done", "html": "<tr>c1"}]
    assert events[2][1] == {"counts": {"done": 1}, "status": "running", "chunks_done": 1}
    assert live_events(_batch(), str, str) == []
    assert [n for n, _ in live_events(_batch(running=False, status="done"), str, str)] == ["progress"]


def test_a_json_api_body_must_be_a_json_object():
    from godot_rag.errors import InvalidInputError
    from godot_rag.pipeline.web_requests import json_object_of

    assert json_object_of(b'{"path": "x"}') == {"path": "x"}
    for body, said in ((b"not json", "not JSON"), (b"\xff\xfe", "not JSON"), (b"[1, 2]", "JSON object")):
        with pytest.raises(InvalidInputError, match=said):
            json_object_of(body)


def test_a_json_submission_carries_its_archive_in_base64():
    import base64

    from godot_rag.errors import InvalidInputError
    from godot_rag.pipeline.web_requests import archive_of

    assert archive_of({}) == b"" and archive_of({"archive_b64": ""}) == b""
    assert archive_of({"archive_b64": base64.b64encode(b"PK\x03\x04").decode()}) == b"PK\x03\x04"
    for bad in ("***", 12):
        with pytest.raises(InvalidInputError, match="archive_b64 is not base64"):
            archive_of({"archive_b64": bad})


def test_a_submission_answers_its_first_analysis_and_every_project():
    from types import SimpleNamespace

    from godot_rag.pipeline.web_requests import submitted_json

    two = [SimpleNamespace(analysis_id="a1", project_id="p1"), SimpleNamespace(analysis_id="a2", project_id="p2")]
    assert submitted_json(two) == {
        "analysis_id": "a1",
        "project_id": "p1",
        "projects": [{"analysis_id": "a1", "project_id": "p1"}, {"analysis_id": "a2", "project_id": "p2"}],
    }


def test_the_live_stream_sends_changes_keeps_alive_when_idle_and_ends_with_the_analysis():
    import asyncio

    from godot_rag.pipeline.web_data import live_stream

    def batch(running: bool, chunks: list) -> dict:
        return {
            "chunks": chunks,
            "files": [],
            "running": running,
            "status": "running" if running else "done",
            "counts": {},
            "progress": {},
            "cursor": None,
        }

    class Feed:
        def __init__(self):
            self.batches = [batch(True, []), batch(True, []), batch(False, [])]

        async def poll(self):
            return self.batches.pop(0)

    row = {"chunk_id": "c1", "order_key": 1, "status": "done"}

    async def collect() -> list[bytes]:
        stream = live_stream(Feed(), batch(True, [row]), lambda v: "<tr/>", lambda e: "", asyncio.Event(), poll_s=0, heartbeat_s=0)
        return [event async for event in stream]

    events = asyncio.run(collect())
    assert events[0].startswith(b"event: chunks") and events[1].startswith(b"event: progress")
    assert b": keep-alive\n\n" in events  # idle polls with nothing to send
    assert events[-1].startswith(b"event: end") and b'"done"' in events[-1]
