"""Log records as text or JSON lines, carrying the trace, analysis and chunk they belong to.

The stage runner sets ``analysis_id`` and ``chunk_id`` for the message it
handles (``log_context``); the trace id comes from the current OpenTelemetry
span. Every record logged while they are set carries them, so one grep (or a
log backend query) on a chunk id finds its lines in every service, and the
trace id leads to the same chunk's spans in Jaeger.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

from opentelemetry import trace

from godot_rag.domain.redact import redact_credentials

ANALYSIS_ID: contextvars.ContextVar[str] = contextvars.ContextVar("godot_rag_analysis_id", default="")
CHUNK_ID: contextvars.ContextVar[str] = contextvars.ContextVar("godot_rag_chunk_id", default="")

# Attributes every LogRecord has; anything else was passed through `extra=` and is kept.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


@contextlib.contextmanager
def log_context(analysis_id: str = "", chunk_id: str = "") -> Iterator[None]:
    """Within the block, log records carry this analysis and chunk (empty values are left unset)."""
    tokens = []
    if analysis_id:
        tokens.append((ANALYSIS_ID, ANALYSIS_ID.set(analysis_id)))
    if chunk_id:
        tokens.append((CHUNK_ID, CHUNK_ID.set(chunk_id)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def _trace_ids() -> tuple[str, str]:
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return "", ""
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


class ContextFilter(logging.Filter):
    """Copies trace_id, span_id, analysis_id and chunk_id onto each record (empty when unknown)."""

    def filter(self, record: logging.LogRecord) -> bool:
        trace_id, span_id = _trace_ids()
        record.trace_id = trace_id
        record.span_id = span_id
        record.analysis_id = ANALYSIS_ID.get()
        record.chunk_id = CHUNK_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, service, logger, message, ids, extras."""

    def __init__(self, service: str):
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("trace_id", "span_id", "analysis_id", "chunk_id"):
            value = getattr(record, key, "")
            if value:
                out[key] = value
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and key not in out and key not in ("trace_id", "span_id", "analysis_id", "chunk_id"):
                out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """The human format, with the ids appended when known."""

    def __init__(self, service: str):
        super().__init__(f"%(asctime)s {service} %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ids = [f"{key}={getattr(record, key)}" for key in ("analysis_id", "chunk_id", "trace_id") if getattr(record, key, "")]
        if not ids:
            return line
        head, sep, rest = line.partition("\n")  # keep a traceback below the ids
        return f"{head} [{' '.join(ids)}]{sep}{rest}"


class RedactFilter(logging.Filter):
    """No URL credentials or DSN passwords in a log line (a git URL or DSN quoted in a message)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_credentials(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def make_handler(service: str, fmt: str, stream=None) -> logging.Handler:
    if fmt not in ("text", "json"):
        raise ValueError(f"log format must be 'text' or 'json', not {fmt!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(ContextFilter())
    handler.addFilter(RedactFilter())
    handler.setFormatter(JsonFormatter(service) if fmt == "json" else TextFormatter(service))
    return handler


def configure_logging(service: str, level: str = "INFO", fmt: str = "text", stream=None) -> logging.Handler:
    """Replace the root logger's handlers with one in the chosen format (settings: LOG_LEVEL, LOG_FORMAT)."""
    handler = make_handler(service, fmt, stream)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
