"""The native fast path of the GDScript parser (``godot_rag._gdchunk``).

``native/gdchunk.c`` re-implements ``gdscript._Chunker`` for files that
parse cleanly and whose code (outside comments and string bodies) is ASCII:
the large majority of real scripts.  It returns the same ``Chunk`` objects,
built in C, so that chunking costs little more than the tree-sitter parse
itself (issue target: at most 30 % over the bare parse; ``make bench``).
Everything else (syntax errors, non-ASCII identifiers) goes to the Python
implementation, which stays the reference: the unit tests compare both on
every corpus file.

The extension is built by ``pip install`` (setup.py).  When it is missing
(a source checkout run without installing) ``chunk`` returns None and the
Python implementation does all the work; ``available()`` tells which,
and a test fails when an installed tree lacks it.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from types import ModuleType

import tree_sitter_gdscript

from godot_rag.domain import gdscript_candidates as cand
from godot_rag.domain.models import Chunk, Span


@lru_cache(maxsize=1)
def _module() -> ModuleType | None:
    # Configured on first use, not at import: importing the domain package
    # must stay cheap and free of native initialisation.
    try:
        from godot_rag import _gdchunk
    except ImportError:
        return None
    _gdchunk.configure(
        tree_sitter_gdscript.language(),
        Chunk,
        Span,
        tuple(f.name for f in dataclasses.fields(Chunk)),
        tuple(f.name for f in dataclasses.fields(Span)),
        cand.SINGLETONS,
        cand.CAPS_TYPES,
        cand.STOP_METHODS,
        cand.KNOWN_CALLS,
        cand.REFERENCE_CALLS,
        cand.NODE_PATH_CALLS,
        cand.KNOWN_NODE_CLASSES,
    )
    return _gdchunk


def available() -> bool:
    return _module() is not None


def chunk(source_file: str, source_bytes: bytes, body_start: int) -> tuple[Chunk, ...] | None:
    """The file's chunks, or None when the Python implementation must handle it."""
    module = _module()
    if module is None:
        return None
    outcome = module.chunk(source_file, source_bytes, body_start)
    return outcome if type(outcome) is tuple else None


def chunk_or_reason(source_file: str, source_bytes: bytes, body_start: int) -> tuple[Chunk, ...] | str:
    """The file's chunks, or why the native path leaves it to Python."""
    module = _module()
    if module is None:
        return "native extension not built"
    return module.chunk(source_file, source_bytes, body_start)


def parse_only(source_bytes: bytes) -> bool:
    """Bare tree-sitter parse through the native module's runtime (benchmark)."""
    module = _module()
    if module is None:
        raise RuntimeError("godot_rag._gdchunk is not built")
    return module.parse_only(source_bytes)
