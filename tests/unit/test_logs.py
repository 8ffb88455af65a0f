"""Structured logs: JSON lines and text carry the trace, analysis and chunk they belong to."""

from __future__ import annotations

import io
import json
import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider

from godot_rag.infra import logs


@pytest.fixture
def capture():
    def make(fmt: str):
        stream = io.StringIO()
        logger = logging.getLogger(f"test.logs.{fmt}")
        logger.handlers[:] = [logs.make_handler("judge", fmt, stream)]
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
        return logger, stream

    return make


def test_json_line_carries_trace_analysis_and_chunk(capture):
    logger, stream = capture("json")
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("judge work") as span, logs.log_context("a1b2", "player.gd:function:_ready"):
        logger.info("judged %s", "chunk", extra={"attempt": 2})
        trace_id = format(span.get_span_context().trace_id, "032x")
    logger.warning("outside")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "judged chunk" and first["level"] == "INFO" and first["service"] == "judge"
    assert first["trace_id"] == trace_id and len(first["span_id"]) == 16
    assert first["analysis_id"] == "a1b2" and first["chunk_id"] == "player.gd:function:_ready"
    assert first["attempt"] == 2
    assert first["time"].endswith("+00:00")
    # Outside the span and the context: no stale ids.
    assert {"trace_id", "analysis_id", "chunk_id"}.isdisjoint(second)


def test_context_nests_and_resets(capture):
    logger, stream = capture("json")
    with logs.log_context(analysis_id="a1"):
        with logs.log_context(chunk_id="c1"):
            logger.info("both")
        logger.info("analysis only")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert (lines[0]["analysis_id"], lines[0]["chunk_id"]) == ("a1", "c1")
    assert lines[1]["analysis_id"] == "a1" and "chunk_id" not in lines[1]
    assert logs.ANALYSIS_ID.get() == "" and logs.CHUNK_ID.get() == ""


def test_json_keeps_the_traceback_in_one_line(capture):
    logger, stream = capture("json")
    try:
        raise ValueError("bad chunk")
    except ValueError:
        logger.exception("failed")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert "ValueError: bad chunk" in record["exception"] and record["level"] == "ERROR"


def test_text_format_appends_the_ids(capture):
    logger, stream = capture("text")
    with logs.log_context("a9", "main.tscn:node:Player"):
        logger.info("hello")
    logger.info("plain")
    first, second = stream.getvalue().splitlines()
    assert " judge INFO test.logs.text: hello [analysis_id=a9 chunk_id=main.tscn:node:Player]" in first
    assert second.endswith("test.logs.text: plain")


def test_configure_logging_replaces_root_handlers_and_rejects_unknown_formats():
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    try:
        stream = io.StringIO()
        handler = logs.configure_logging("parser", "WARNING", "json", stream)
        assert root.handlers == [handler] and root.level == logging.WARNING
        logging.getLogger("x").warning("w")
        logging.getLogger("x").info("dropped")
        assert [json.loads(line)["message"] for line in stream.getvalue().splitlines()] == ["w"]
        with pytest.raises(ValueError):
            logs.make_handler("parser", "xml")
    finally:
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
