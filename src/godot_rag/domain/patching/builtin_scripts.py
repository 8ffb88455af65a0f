"""Built-in scripts of scenes and resources (`script/source = "..."`), patched as the scripts they are.

The source is unescaped, patched by the GDScript patcher with the project's index, and each edit is
written back at the escaped text's offsets with its replacement escaped, so the scene's diff shows each
change on its own line with its own basis. A source whose escapes the text format would not write again
as they are, or whose patched text would not parse, is left as it is with a TODO.
"""

from __future__ import annotations

from tree_sitter import Parser

from godot_rag.domain.chunking.gdscript import _language
from godot_rag.domain.chunking.tolerant import parse_tolerant
from godot_rag.domain.judging.rules import builtin_script_spans, unescape_string_value
from godot_rag.domain.patching.gdscript import patch_gdscript
from godot_rag.domain.patching.knowledge import PatchKnowledge
from godot_rag.domain.patching.model import Edit, EditConflict, Todo, apply_edits
from godot_rag.domain.patching.symbols import ProjectSymbols


def escape_string_value(text: str) -> str:
    """``text`` as the text format writes a string value: backslashes and double quotes escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _raw_offsets(raw: str) -> list[int]:
    """For each UTF-8 byte offset of the unescaped text (and its end), the byte offset in ``raw`` where the
    character it belongs to starts: an edit of whole characters maps to whole escape sequences."""
    at: list[int] = []
    i = rb = 0
    while i < len(raw):
        escaped = raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in '\\"'
        ch = raw[i + 1] if escaped else raw[i]
        at.extend([rb] * len(ch.encode("utf-8")))
        rb += 2 if escaped else len(ch.encode("utf-8"))
        i += 2 if escaped else 1
    at.append(rb)
    return at


def builtin_script_edits(
    path: str, text: str, knowledge: PatchKnowledge, index: ProjectSymbols, parser: Parser | None = None
) -> tuple[list[Edit], list[Todo]]:
    """Edits (byte offsets in ``text``) and TODOs (at ``text``'s lines) for every built-in script of a scene or resource."""
    edits: list[Edit] = []
    todos: list[Todo] = []
    for start, end in builtin_script_spans(text):
        raw = text[start:end]
        source = unescape_string_value(raw)
        first_line = text.count("\n", 0, start) + 1
        if escape_string_value(source) != raw:
            todos.append(
                Todo(
                    path,
                    first_line,
                    "built-in-script",
                    path,
                    "a built-in script with escapes the patch does not write back as they are: not patched",
                )
            )
            continue
        script_path = f"{path} (built-in script)"
        script_edits, script_todos, _kept, _clean = patch_gdscript(
            script_path, source, knowledge, index.with_script(script_path, source), parser
        )
        todos.extend(Todo(path, first_line + max(t.line, 1) - 1, t.rule, t.symbol, t.note, t.record_id) for t in script_todos)
        if not script_edits:
            continue
        try:
            patched = apply_edits(source.encode("utf-8"), script_edits)
        except EditConflict as exc:
            todos.append(
                Todo(path, first_line, "conflict", path, f"two changes of the built-in script overlap ({exc}): not patched")
            )
            continue
        if parse_tolerant(parser or Parser(_language()), patched)[0].root_node.has_error:
            todos.append(
                Todo(
                    path,
                    first_line,
                    "parse",
                    path,
                    "the patched built-in script would not parse cleanly with tree-sitter: not patched",
                )
            )
            continue
        base = len(text[:start].encode("utf-8"))
        at = _raw_offsets(raw)
        edits.extend(Edit(base + at[e.start], base + at[e.end], escape_string_value(e.replacement), e.basis) for e in script_edits)
    return edits, todos
