"""The web screen's request rules and request shapes, apart from the HTTP wiring (services/gateway/web.py, web_pages.py, web_api.py).

Pure: which requests are refused (Host against DNS rebinding, Origin/Referer
against cross-site requests), how a form, a query or a JSON body becomes the
same inputs the gRPC API and the CLI pass to the pipeline, and how answers are
written (JSON text, server-sent events of the live feed).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from ipaddress import ip_address
from typing import Any
from urllib.parse import urlsplit

from godot_rag.errors import InvalidInputError
from godot_rag.infra.auth import bearer_of, token_matches
from godot_rag.pipeline.replay import ReplayOptions
from godot_rag.pipeline.submit import DEFAULT_PROMPT, SubmitInput
from godot_rag.pipeline.web_views import to_csv

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


# ---------------------------------------------------------------- request checks (CSRF, DNS rebinding)


def allowed_host_names(configured_host: str) -> frozenset[str]:
    """Loopback names and the host the gateway is configured to listen on (a
    wildcard address names no host)."""
    names = set(LOOPBACK_NAMES)
    host = configured_host.strip().strip("[]").lower()
    if host and host not in ("0.0.0.0", "::"):
        names.add(host)
    return frozenset(names)


def split_host(value: str) -> tuple[str, str] | None:
    """'Host' header -> (name, port), IPv6 brackets removed; None when malformed."""
    value = value.strip().lower()
    if not value:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        return name, rest[1:]
    if value.count(":") > 1:
        return None
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    return name, port


def origin_matches(origin: str, host: tuple[str, str]) -> bool:
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    default = "443" if parts.scheme == "https" else "80"
    return (parts.hostname.lower(), str(port) if port else default) == (host[0], host[1] or default)


def check_request(method: str, headers, allowed: frozenset[str]) -> str:
    """Why a request is refused ('' when it is accepted).

    Host must name this server (a DNS-rebound name does not); a browser's
    cross-origin request carries a foreign Origin (or Referer), refused; a
    state-changing request from a browser must come from this very origin.
    """
    host = split_host(headers.get("Host", ""))
    if host is None or not (host[0] in allowed or is_loopback_ip(host[0])):
        return "unexpected Host header"
    origin = headers.get("Origin")
    if origin is not None and not origin_matches(origin, host):
        return "cross-origin request"
    if method not in SAFE_METHODS:
        if origin is None:
            referer = headers.get("Referer")
            if referer is not None and not origin_matches(referer, host):
                return "cross-origin request"
            if headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
                return "cross-origin request"
    return ""


# Reachable without the token: the sign-in page and the static files it uses.
OPEN_PATHS = frozenset({"/login", "/static/app.css", "/static/early.js", "/static/app.js"})


@dataclass(frozen=True)
class Refusal:
    """How a request is turned away: a status and message (as JSON or plain text), or a redirect."""

    status: int
    message: str = ""
    as_json: bool = False
    redirect: str = ""


def access_refusal(
    method: str, path: str, headers: Mapping[str, str], cookie: str, allowed: frozenset[str], token: str
) -> Refusal | None:
    """Why the web screen turns a request away (None: it goes on to its handler).

    The request checks first (Host, Origin: 403); then the token, as ``Authorization: Bearer`` (API
    clients) or the sign-in cookie (browsers), when one is configured: 401 for the API and for changes,
    the sign-in page for a page; then a JSON endpoint's body type (415).
    """
    reason = check_request(method, headers, allowed)
    if reason:
        return Refusal(403, f"refused: {reason}")
    given = bearer_of(headers.get("Authorization", "")) or cookie
    if token and path not in OPEN_PATHS and not token_matches(given, token):
        if path.startswith("/api/") or method not in SAFE_METHODS:
            return Refusal(401, "missing or wrong token (Authorization: Bearer, or sign in at /login)", as_json=True)
        return Refusal(303, redirect="/login")
    content_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
    if method not in SAFE_METHODS and path.startswith("/api/") and content_type != "application/json":
        return Refusal(415, "JSON endpoints accept only Content-Type: application/json", as_json=True)
    return None


def answers_json(path: str) -> bool:
    """The API, the exports and the live event stream answer errors in JSON; pages answer with a page."""
    return path.startswith("/api/") or "/export/" in path or path.endswith("/events")


# The heading of the error page for each status a typed error maps to (infra/grpc_edge.py).
ERROR_TITLES = {400: "Invalid input", 403: "Refused", 404: "Not found", 409: "Not possible now", 429: "Too many requests"}


def error_title(status: int) -> str:
    return ERROR_TITLES.get(status, "Unavailable")


def submit_form_values(given: Mapping[str, str] | None = None) -> dict[str, str]:
    """The submit form's fields: what was given, the default prompt and empty fields otherwise."""
    return {"prompt": DEFAULT_PROMPT, "path": "", "git_url": "", "git_ref": "", "text": "", **(given or {})}


def is_loopback_ip(name: str) -> bool:
    try:
        return ip_address(name).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------- request shapes


def form_body(form: Mapping[str, str], *, has_archive: bool) -> dict[str, str]:
    """The submit form's fields as a submission body: pasted text is expanded text when it starts with a header."""
    body = {
        "prompt": form.get("prompt", ""),
        "path": form.get("path", "").strip(),
        "git_url": form.get("git_url", "").strip(),
        "git_ref": form.get("git_ref", "").strip(),
    }
    text = form.get("text", "")
    if not (body["path"] or body["git_url"] or has_archive) and text.strip():
        body["expanded_text" if text.lstrip().startswith("# ") else "snippet"] = text
    return body


@dataclass(frozen=True)
class SubmitForm:
    """The submit form as posted: its text fields (to show again on an error), the submission body, the archive."""

    fields: dict[str, str]
    body: dict[str, str]
    archive: bytes = b""
    archive_name: str = ""


def submit_form_of(post: Mapping[str, Any]) -> SubmitForm:
    """A posted submit form: its fields, and the archive when a file was chosen (a part with a filename and a file)."""
    fields = {k: str(post.get(k, "")) for k in submit_form_values()}
    part: Any = post.get("archive")
    archive, name = b"", ""
    if getattr(part, "filename", "") and getattr(part, "file", None) is not None:
        archive, name = part.file.read(), str(part.filename)
    return SubmitForm(fields, form_body(fields, has_archive=bool(archive)), archive, name)


def json_object_of(body: bytes) -> dict[str, Any]:
    """A request body that must be a JSON object; InvalidInputError says what it is instead."""
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidInputError("the body is not JSON") from None
    if not isinstance(value, dict):
        raise InvalidInputError("the body must be a JSON object")
    return value


def archive_of(body: Mapping[str, Any]) -> bytes:
    """The archive a JSON submission carries in ``archive_b64`` (empty when none)."""
    if not body.get("archive_b64"):
        return b""
    try:
        return base64.b64decode(body["archive_b64"], validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise InvalidInputError("archive_b64 is not base64") from None


# Everything the pages use is served from here: no inline script, nothing from elsewhere.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
# The live feed's server-sent events: never cached or buffered by a proxy.
EVENT_STREAM_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    **SECURITY_HEADERS,
}


def submitted_json(submitted: Sequence[Any]) -> dict[str, Any]:
    """The JSON API's answer to a submission: the first analysis, and every project's when the input held several."""
    return {
        "analysis_id": submitted[0].analysis_id,
        "project_id": submitted[0].project_id,
        "projects": [{"analysis_id": s.analysis_id, "project_id": s.project_id} for s in submitted],
    }


def submit_input_of(body: Mapping[str, Any], archive: bytes, archive_name: str, client: str) -> SubmitInput:
    """A submission body (JSON or form) as the pipeline's input; a loopback client may name local paths."""

    def text(key: str) -> str:
        value = body.get(key, "")
        return value if isinstance(value, str) else ""

    return SubmitInput(
        prompt=text("prompt").strip(),
        path=text("path"),
        expanded_text=text("expanded_text"),
        snippet=text("snippet"),
        snippet_kind=text("snippet_kind"),
        git_url=text("git_url"),
        git_ref=text("git_ref"),
        archive=archive,
        archive_name=archive_name,
        client=client,
        local_caller=is_loopback_ip(client),
    )


def replay_options_of(analysis_id: str, body: Mapping[str, Any]) -> ReplayOptions:
    """A replay request body as the options the gRPC Replay and `godot-rag replay` pass."""
    try:
        limit = int(body.get("limit_per_table") or 0)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"limit_per_table: {exc}") from exc
    return ReplayOptions(
        analysis_id=analysis_id,
        stage=str(body.get("stage") or "judge"),
        chunk_ids=tuple(str(c) for c in body.get("chunk_ids") or ()),
        source_files=tuple(str(f) for f in body.get("source_files") or ()),
        judge=str(body.get("judge") or ""),
        prompt_version=str(body.get("prompt_version") or ""),
        cascade=str(body.get("cascade") or ""),
        limit_per_table=limit,
    )


def replay_json(r: Any) -> dict:
    return {
        "replay_id": r.replay_id,
        "analysis_id": r.analysis_id,
        "stage": r.stage,
        "run": r.run,
        "status": r.status,
        "judgment_version": r.judgment_version,
        "chunks": [{"chunk_id": c.chunk_id, "source": c.source, "published": c.published} for c in r.chunks],
    }


# ---------------------------------------------------------------- query parameters


def min_score_of(query: Mapping[str, str]) -> float:
    """The file page's score filter (``min``), clamped to 0..1; 0 when absent or not a number."""
    try:
        return max(0.0, min(1.0, float(query.get("min", "0") or 0)))
    except ValueError:
        return 0.0


def diff_form(query: Mapping[str, str]) -> dict[str, Any]:
    """The diff page's form: two result ids, the analysis whose versions are listed, changed-only.
    A first visit (no comparison asked yet) shows changed chunks only."""
    return {
        "a": query.get("a", "").strip(),
        "b": query.get("b", "").strip(),
        "analysis": query.get("analysis", "").strip(),
        "changed": query.get("changed", "1" if "a" not in query else "") == "1",
    }


def since_of(value: str) -> datetime | None:
    """The live feed's resume point (``Last-Event-ID`` or ``since``); None when absent or malformed."""
    try:
        return datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


# ---------------------------------------------------------------- responses: JSON and the live event stream


def json_default(value: object) -> object:
    """JSON for what the pages' data holds beside plain values: datetimes as ISO text, sets and tuples as lists."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def to_json_text(data: object, *, indent: int | None = None) -> str:
    return json.dumps(data, default=json_default, ensure_ascii=False, indent=indent)


@dataclass(frozen=True)
class Download:
    """An export as the file a browser saves."""

    text: str
    content_type: str
    filename: str


def export_download(rows: list[dict], columns: Sequence[str], fmt: str, name: str) -> Download:
    """Rows as a JSON or CSV download named ``name``."""
    if fmt == "json":
        return Download(to_json_text(rows, indent=1), "application/json", f"{name}.json")
    return Download(to_csv(rows, columns), "text/csv", f"{name}.csv")


def sse_message(name: str, data: object, cursor: object) -> bytes:
    """One server-sent event; its id is the feed's cursor (a timestamp) so a reconnect resumes there."""
    head = f"event: {name}\n" + (f"id: {cursor.isoformat()}\n" if isinstance(cursor, datetime) else "")
    return (head + f"data: {to_json_text(data)}\n\n").encode("utf-8")


def live_events(
    batch: Mapping[str, Any], render_chunk: Callable[[Mapping[str, Any]], str], render_file: Callable[[Mapping[str, Any]], str]
) -> list[tuple[str, object]]:
    """The events of one live-feed batch: changed chunk rows and file entries (as rendered HTML), then
    the counts and progress when anything changed or the analysis ended. Empty: nothing to send."""
    events: list[tuple[str, object]] = []
    if batch["chunks"]:
        events.append(
            (
                "chunks",
                [
                    {"id": v["chunk_id"], "order": v["order_key"], "status": v["status"], "html": render_chunk(v)}
                    for v in batch["chunks"]
                ],
            )
        )
    if batch["files"]:
        events.append(("files", [{"path": e["source_file"], "html": render_file(e)} for e in batch["files"]]))
    if events or not batch["running"]:
        events.append(("progress", {"counts": batch["counts"], "status": batch["status"], **batch["progress"]}))
    return events
