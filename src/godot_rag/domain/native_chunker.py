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
from collections.abc import Callable
from functools import lru_cache
from types import ModuleType

import tree_sitter_gdscript

from godot_rag.domain import gdscript_candidates as cand
from godot_rag.domain.models import PARSE_OK, Chunk, ChunkingResult, Span


@lru_cache(maxsize=1)
def _module() -> ModuleType | None:
    # Configured on first use, not at import: importing the domain package
    # must stay cheap and free of native initialisation.
    try:
        from godot_rag import _gdchunk
    except ImportError:
        return None
    # gdscript imports this module: read its constants once both are loaded.
    from godot_rag.domain.gdscript import PARSER_VERSION, SOURCE_KIND

    models = (Chunk, Span, ChunkingResult)
    _gdchunk.configure(
        tree_sitter_gdscript.language(),
        models,
        tuple(tuple(f.name for f in dataclasses.fields(model)) for model in models),
        (SOURCE_KIND, PARSE_OK, PARSER_VERSION),
        (
            cand.SINGLETONS,
            cand.CAPS_TYPES,
            cand.STOP_METHODS,
            cand.KNOWN_CALLS,
            cand.REFERENCE_CALLS,
            cand.NODE_PATH_CALLS,
            cand.KNOWN_NODE_CLASSES,
        ),
    )
    return _gdchunk


def available() -> bool:
    return _module() is not None


def parse(source_file: str, source_bytes: bytes, sha256: str) -> ChunkingResult | None:
    """The ``ok`` result of a file within the size limit, or None when Python decides.

    None covers the native extension being absent, NUL bytes, invalid UTF-8,
    a blank file and every file ``chunk_or_reason`` leaves to Python.
    """
    return parser()(source_file, source_bytes, sha256)


def _absent(source_file: str, source_bytes: bytes, sha256: str) -> None:
    return None


@lru_cache(maxsize=1)
def parser() -> Callable[[str, bytes, str], ChunkingResult | None]:
    """``parse`` as one callable (the C function itself when built): the
    parser calls it once per file, so it resolves the module only once."""
    module = _module()
    return _absent if module is None else module.parse


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
