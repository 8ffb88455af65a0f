"""Credentials out of text that is stored or logged: ``scheme://user:pass@host`` and ``password=...``.

Errors shown in the web screen and written to logs may quote a git URL or a
database DSN. A hand scan, not a regular expression: it runs in one pass over
hostile text of any length (a backtracking pattern over a long run of URL
characters is quadratic).
"""

from __future__ import annotations

REDACTED = "***"
# Characters that end a URL's authority (user:pass@host:port).
_AUTHORITY_END = frozenset("/?#\"'<>` \t\r\n")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_SECRET_KEYS = ("password=", "passwd=", "pwd=", "token=", "api_key=", "apikey=")


def _redact_urls(text: str) -> str:
    out: list[str] = []
    pos = 0
    n = len(text)
    while True:
        sep = text.find("://", pos)
        if sep < 0:
            break
        # The scheme must directly precede "://" (one letter at least); looked at backwards, bounded by the scheme.
        start = sep
        while start > pos and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        authority_start = sep + 3
        end = authority_start
        while end < n and text[end] not in _AUTHORITY_END:
            end += 1
        at = text.rfind("@", authority_start, end)
        if start < sep and at >= 0:
            out.append(text[pos:authority_start])
            out.append(REDACTED)
            out.append(text[at:end])
        else:
            out.append(text[pos:end])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _redact_keys(text: str) -> str:
    lower = text.lower()
    if not any(k in lower for k in _SECRET_KEYS):
        return text
    out: list[str] = []
    pos = 0
    n = len(text)
    i = 0
    while i < n:
        hit = None
        for key in _SECRET_KEYS:
            if lower.startswith(key, i) and (i == 0 or not lower[i - 1].isalnum() and lower[i - 1] != "_"):
                hit = key
                break
        if hit is None:
            i += 1
            continue
        value_start = i + len(hit)
        end = value_start
        while end < n and text[end] not in " \t\r\n&;,'\"":
            end += 1
        out.append(text[pos:value_start])
        out.append(REDACTED)
        pos = i = end
    out.append(text[pos:])
    return "".join(out)


def redact_credentials(text: str) -> str:
    """``https://u:p@host/x`` -> ``https://***@host/x``; ``password=s3cret`` -> ``password=***``."""
    if not text:
        return text
    return _redact_keys(_redact_urls(text))
