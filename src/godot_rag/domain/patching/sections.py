"""Section header lines of .tscn / .tres / project.godot (``[node name="A" type="B" parent="."]``), parsed by hand.

The pattern this replaces let a value match as a quoted string or as a bare
run of characters, inside a repeated group: on a line that then failed to
close, the engine tried every split, 2^n for n attributes (a 200-byte line took
seconds). This scan looks at each character once; ``)`` and ``"`` searches
that found nothing are not repeated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Single character classes, matched at one position: linear, nothing to retry.
_WORD_RUN = re.compile(r"\w*")
_SPACE_RUN = re.compile(r"\s*")
_BARE_RUN = re.compile(r"[^\s\]]*")


@dataclass(frozen=True)
class Attr:
    key: str
    value: str  # as written: quotes kept
    start: int  # offset of the value in the line


@dataclass(frozen=True)
class Section:
    tag: str
    attrs: tuple[Attr, ...]

    def values(self) -> dict[str, str]:
        """key -> value without its quotes (the first of a repeated key wins)."""
        out: dict[str, str] = {}
        for a in self.attrs:
            out.setdefault(a.key, a.value.strip('"'))
        return out


def _word_end(line: str, i: int) -> int:
    return _WORD_RUN.match(line, i).end()  # type: ignore[union-attr]


def _space_end(line: str, i: int) -> int:
    return _SPACE_RUN.match(line, i).end()  # type: ignore[union-attr]


def _bare_end(line: str, i: int) -> int:
    return _BARE_RUN.match(line, i).end()  # type: ignore[union-attr]


def parse_section(line: str) -> Section | None:
    """``[tag key=value ...]`` -> its tag and attributes; None when the line is not a section header.

    A value is a quoted string, a constructor call ``Name( ... )`` (spaces
    inside, as Godot 3 writes ``ExtResource( 1 )``), or a run of characters
    other than whitespace and ``]``. Only whitespace may follow the ``]``.
    """
    n = len(line)
    if not line.startswith("["):
        return None
    i = _word_end(line, 1)
    if i == 1:
        return None
    tag = line[1:i]
    attrs: list[Attr] = []
    no_quote_after = no_paren_after = n + 1
    while True:
        j = _space_end(line, i)
        if j < n and line[j] == "]":
            k = _space_end(line, j + 1)
            return Section(tag, tuple(attrs)) if k == n else None
        if j == i or j >= n:
            return None  # attributes are separated by whitespace; the line must close with ']'
        k = _word_end(line, j)
        if k == j or k >= n or line[k] != "=":
            return None
        key, v = line[j:k], k + 1
        end = -1
        if v < n and line[v] == '"':
            close = line.find('"', v + 1) if v + 1 < no_quote_after else -1
            if close < 0:
                no_quote_after = min(no_quote_after, v + 1)
            else:
                end = close + 1
        else:
            w = _word_end(line, v)
            if w > v and w < n and line[w] == "(":
                close = line.find(")", w) if w < no_paren_after else -1
                if close < 0:
                    no_paren_after = min(no_paren_after, w)
                else:
                    end = close + 1
        if end >= 0 and end < n and not (line[end].isspace() or line[end] == "]"):
            end = -1  # `"a"b` or `F(x)y`: the whole run is one bare value
        if end < 0:
            end = _bare_end(line, v)
            if end == v:
                return None
        attrs.append(Attr(key, line[v:end], v))
        i = end
