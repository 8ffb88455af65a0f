"""The web screen's request rules and request shapes, apart from the HTTP wiring (services/gateway/web.py).

Pure: which requests are refused (Host against DNS rebinding, Origin/Referer
against cross-site requests), and how a form or a JSON body becomes the same
inputs the gRPC API and the CLI pass to the pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from ipaddress import ip_address
from typing import Any
from urllib.parse import urlsplit

from godot_rag.errors import InvalidInputError
from godot_rag.pipeline.replay import ReplayOptions
from godot_rag.pipeline.submit import SubmitInput

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
