"""patch_files(): a project's files in, the patch (edits, diff, basis per hunk, TODOs) out.

Pure: the caller reads the files and writes the results (pipeline/patch.py).

After the rules have run, every patched GDScript file is parsed again with
tree-sitter: a file whose patched text no longer parses cleanly keeps its
original text and gets a TODO instead (a rule bug must never reach a user's
project).  Then the rules judge runs over the patched chunks; each Godot 3
fact it still finds is a TODO ("still Godot 3 after the patch") with the
judge's own description, so what remains is listed rather than hidden.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import replace

from tree_sitter import Parser

from godot_rag.domain.chunking.direct import chunk_direct
from godot_rag.domain.chunking.gdscript import _language, parse_gdscript
from godot_rag.domain.chunking.tolerant import parse_tolerant
from godot_rag.domain.judging.rules import RenameEntry, RenameIndex, chunk_facts, csproj_sdk, declared_names
from godot_rag.domain.models import SIGNAL_GODOT3
from godot_rag.domain.patching.builtin_scripts import builtin_script_edits
from godot_rag.domain.patching.gdscript import patch_gdscript
from godot_rag.domain.patching.knowledge import PatchKnowledge, shipped_knowledge
from godot_rag.domain.patching.model import Basis, Edit, EditConflict, FilePatch, Hunk, PatchResult, Todo, apply_edits
from godot_rag.domain.patching.shaders import patch_shader
from godot_rag.domain.patching.symbols import ProjectSymbols, SharedProjectSymbols
from godot_rag.domain.patching.text_files import patch_project_godot, patch_scene
from godot_rag.domain.retrieval.knowledge import RENAME_TABLE_CHANGE_TYPE

PATCH_VERSION = "patch/2"
DIFF_CONTEXT = 3

# Rules-judge facts about the scene file format that the scene-format TODO explains.
_FORMAT_FACTS = ("format=2", "numeric ext_resource id", "ExtResource( 1 ) reference")

_SOURCE_KIND = {".gd": "gdscript", ".tscn": "scene", ".tres": "resource", ".gdshader": "shader", ".shader": "shader"}


def source_kind(path: str) -> str:
    if path.rsplit("/", 1)[-1] == "project.godot":
        return "project_config"
    for ext, kind in _SOURCE_KIND.items():
        if path.endswith(ext):
            return kind
    return ""


def patch_reads(path: str) -> bool:
    """Whether the patch reads a project file: the kinds it patches, a Godot 2 project's engine.cfg and C#
    project files (which it names instead of patching)."""
    return bool(source_kind(path)) or path == "engine.cfg" or path.endswith(".csproj")


def _csproj_todo(path: str, text: str) -> Todo | None:
    """What a C# project file on Godot 3's SDK needs by hand (the patch does not touch C#)."""
    sdk = csproj_sdk(text)
    if sdk is None or sdk[0] != SIGNAL_GODOT3:
        return None
    note = (
        "a C# project on Godot 3's SDK: set Sdk to Godot.NET.Sdk/<the project's 4.x version> and TargetFramework to "
        "net6.0 or later, and declare every C# script class `partial` (the patch does not touch C#)"
    )
    return Todo(path, text.count("\n", 0, sdk[3]) + 1, "csharp-project", "Godot.NET.Sdk", note)


def default_index(files: Mapping[str, str], knowledge: PatchKnowledge, index_json: str = "") -> SharedProjectSymbols:
    """The shared project index over ``files`` (or the one stored with an analysis, ``index_json``)."""
    v = knowledge.vocabulary
    return SharedProjectSymbols.from_json(index_json, files, v.classes3 | v.singletons3)


def _rename_index(knowledge: PatchKnowledge) -> RenameIndex:
    """The rules judge's rename index over the same pairs the patch applies."""
    index = RenameIndex(vocabulary=knowledge.vocabulary)
    for table, pairs in knowledge.renames.items():
        change = RENAME_TABLE_CHANGE_TYPE.get(table, "behaviour")
        for r in pairs.values():
            v = knowledge.vocabulary
            entry = RenameEntry(
                r.record_id,
                r.old,
                r.new,
                change,
                True,
                r.old_in_godot4,
                r.new in v.classes3 or r.new in v.member_names3 or r.new in v.globals3,
            )
            index.by_old.setdefault(r.old, []).append(entry)
            index.by_new.setdefault(r.new, []).append(entry)
    return index


def residual_godot3(
    path: str, text: str, knowledge: PatchKnowledge, rename_index: RenameIndex | None = None
) -> list[tuple[int, str, str, str]]:
    """Godot 3 facts the rules judge finds in ``text``: (line, what, old, new)."""
    kind = source_kind(path)
    rename_index = rename_index or _rename_index(knowledge)
    data = text.encode("utf-8")
    if kind == "gdscript":
        result = parse_gdscript(path, data)
        declared = declared_names(result.chunks)
    elif kind:
        result = chunk_direct(path, kind, data)
        declared = frozenset()
    else:
        return []
    out: list[tuple[int, str, str, str]] = []
    for chunk in result.chunks:
        for f in chunk_facts(chunk, kind, rename_index, declared):
            if f.signal == SIGNAL_GODOT3:
                out.append((f.line, f.what, f.old, f.new))
    return sorted(set(out))


def _line_starts(data: bytes) -> list[int]:
    return [0] + [m.end() for m in re.finditer(rb"\n", data)]


def patch_file(path: str, text: str, knowledge: PatchKnowledge, index: ProjectSymbols, parser: Parser | None = None) -> FilePatch:
    kind = source_kind(path)
    fp = FilePatch(path, text, text)
    if kind == "gdscript":
        edits, todos, kept, _ = patch_gdscript(path, text, knowledge, index, parser)
        fp.kept = kept
    elif kind == "project_config":
        edits, todos = patch_project_godot(path, text, knowledge)
    elif kind in ("scene", "resource"):
        edits, todos = patch_scene(path, text, knowledge, lambda node_path: index.scene_node_type(path, node_path))
        script_edits, script_todos = builtin_script_edits(path, text, knowledge, index, parser)
        edits, todos = edits + script_edits, todos + script_todos
    elif kind == "shader":
        edits, todos = patch_shader(path, text, knowledge)
    else:
        return fp
    fp.todos = list(todos)
    data = text.encode("utf-8")
    try:
        patched = apply_edits(data, edits).decode("utf-8")
    except EditConflict as exc:
        fp.todos.append(Todo(path, 1, "conflict", path, f"two changes overlap ({exc}): the file is left as it is"))
        return fp
    if kind == "gdscript" and edits:
        tree, _ = parse_tolerant(parser or Parser(_language()), patched.encode("utf-8"))
        if tree.root_node.has_error:
            fp.todos.append(
                Todo(path, 1, "parse", path, "the patched text would not parse cleanly with tree-sitter: the file is left as it is")
            )
            return fp
    fp.edits = sorted(edits, key=lambda e: e.start)
    fp.patched = patched
    return fp


def _range(start: int, length: int) -> str:
    """A unified diff's line range (difflib's ``_format_range_unified``): ``start`` is 0-based."""
    if length == 1:
        return f"{start + 1}"
    return f"{start if length == 0 else start + 1},{length}"


def _changes(fp: FilePatch) -> list[tuple[int, int, list[str]]]:
    """The patched file as blocks of replaced lines, from its edits: (first old line, 0-based; old line count;
    the new lines). The lines an edit touches are replaced as a block; edits on the same lines share one."""
    old = fp.original.encode("utf-8")
    old_lines = fp.original.splitlines(keepends=True)
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line.encode("utf-8")))
    last = max(len(old_lines) - 1, 0)
    blocks: list[tuple[int, int, list[Edit]]] = []
    for e in sorted(fp.edits, key=lambda e: (e.start, e.end)):
        a = min(bisect_right(starts, e.start) - 1, last)
        b = max(a, min(bisect_right(starts, max(e.start, e.end - 1)) - 1, last))
        if blocks and a <= blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], max(blocks[-1][1], b), [*blocks[-1][2], e])
        else:
            blocks.append((a, b, [e]))
    changes: list[tuple[int, int, list[str]]] = []
    for a, b, edits in blocks:
        base = starts[a]
        moved = [replace(e, start=e.start - base, end=e.end - base) for e in edits]
        new_text = apply_edits(old[base : starts[b + 1]], moved).decode("utf-8")
        changes.append((a, b - a + 1, new_text.splitlines(keepends=True)))
    return changes


def unified_diff(fp: FilePatch, context: int = DIFF_CONTEXT) -> list[str]:
    """The unified diff of a patched file, in difflib's form (header lines, then hunks), made from its edits.

    The edits say which lines changed, so no line matching is needed: difflib's took minutes on a scene of a
    thousand like nodes (quadratic in repeated lines). Changes fewer than ``2 * context`` lines apart share
    a hunk, as in difflib.
    """
    old_lines = fp.original.splitlines(keepends=True)
    changes = _changes(fp)
    out = [f"--- a/{fp.path}\n", f"+++ b/{fp.path}\n"]
    delta = 0  # new line numbers run ahead of the old ones by the changes before
    i = 0
    while i < len(changes):
        j = i
        while j + 1 < len(changes) and changes[j + 1][0] - (changes[j][0] + changes[j][1]) <= 2 * context:
            j += 1
        lo = max(0, changes[i][0] - context)
        hi = min(len(old_lines), changes[j][0] + changes[j][1] + context)
        body: list[str] = []
        pos = lo
        grown = 0
        for a, n, new_lines in changes[i : j + 1]:
            body.extend(" " + line for line in old_lines[pos:a])
            body.extend("-" + line for line in old_lines[a : a + n])
            body.extend("+" + line for line in new_lines)
            grown += len(new_lines) - n
            pos = a + n
        body.extend(" " + line for line in old_lines[pos:hi])
        old_len = hi - lo
        out.append(f"@@ -{_range(lo, old_len)} +{_range(lo + delta, old_len + grown)} @@\n")
        out.extend(body)
        delta += grown
        i = j + 1
    return out


def _hunks(fp: FilePatch) -> list[Hunk]:
    if not fp.changed:
        return []
    diff = unified_diff(fp)
    data = fp.original.encode("utf-8")
    # Each edit's original line range, to tie it to the hunk that shows it.
    starts = _line_starts(data)
    # Sorted by start and never overlapping (apply_edits checked), so their last lines are sorted too.
    spans = [(bisect_right(starts, e.start), bisect_right(starts, max(e.start, e.end - 1)), e) for e in fp.edits]
    last_lines = [b for _, b, _ in spans]
    hunks: list[Hunk] = []
    i = 2
    while i < len(diff):
        header = diff[i]
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", header)
        j = i + 1
        while j < len(diff) and not diff[j].startswith("@@"):
            j += 1
        body = diff[i:j]
        if m is None:  # difflib writes a header before every hunk
            raise AssertionError(f"unexpected diff line {header!r}")
        os_, ol, ns, nl = int(m.group(1)), int(m.group(2) or 1), int(m.group(3)), int(m.group(4) or 1)
        lo, hi = (os_, os_ + max(ol, 1) - 1) if ol else (os_ + 1, os_ + 1)
        basis: list[Basis] = []
        lines: list[int] = []
        k = bisect_left(last_lines, lo)
        while k < len(spans) and spans[k][0] <= hi:
            a, _, e = spans[k]
            basis.extend(e.basis)
            lines.extend([a] * len(e.basis))
            k += 1
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in body)
        hunks.append(Hunk(fp.path, os_, ol, ns, nl, text, tuple(basis), tuple(lines)))
        i = j
    return hunks


def render_diff(files: list[FilePatch], hunks: list[Hunk]) -> str:
    out: list[str] = []
    by_file: dict[str, list[Hunk]] = {}
    for h in hunks:
        by_file.setdefault(h.path, []).append(h)
    for fp in files:
        if fp.path not in by_file:
            continue
        out.append(f"--- a/{fp.path}\n+++ b/{fp.path}\n")
        out.extend(h.text for h in by_file[fp.path])
    return "".join(out)


def patch_files(
    files: Mapping[str, str], knowledge: PatchKnowledge | None = None, index: ProjectSymbols | None = None, *, residual: bool = True
) -> PatchResult:
    """Patch a project given as {project-relative path: text}; files of other kinds pass through unchanged."""
    knowledge = knowledge or shipped_knowledge()
    index = index or default_index(files, knowledge)
    parser = Parser(_language())
    rename_index = _rename_index(knowledge) if residual else None
    patches: list[FilePatch] = []
    for path in sorted(files):
        if not source_kind(path):
            continue
        fp = patch_file(path, files[path], knowledge, index, parser)
        if residual:
            own = {(t.line, t.rule) for t in fp.todos}
            mapped = _map_lines(fp)
            explained = {t.rule for t in fp.todos}
            for line, what, old, new in residual_godot3(path, fp.patched, knowledge, rename_index):
                if "scene-format" in explained and any(w in what for w in _FORMAT_FACTS):
                    continue  # the scene-format TODO says why these stay
                orig_line = mapped.get(line, line)
                if (orig_line, "residual") in own:
                    continue
                own.add((orig_line, "residual"))
                note = f"still Godot 3 after the patch: {what}" + (f" ({old} -> {new})" if old and new else "")
                change = knowledge.change_for(old.split(".")[-1].rstrip("()")) if old else None
                if change is not None:
                    note += f". {change[1]}"
                fp.todos.append(Todo(path, orig_line, "residual", old or what, note, change[0] if change else ""))
        fp.todos.sort(key=lambda t: (t.line, t.rule))
        patches.append(fp)
    if "engine.cfg" in files and "project.godot" not in files:
        # A Godot 2 project: the changes above are Godot 3 -> 4, and Godot 2's names and formats stay.
        note = (
            "a Godot 2 project (engine.cfg, no project.godot): this patch converts Godot 3 to Godot 4; open the "
            "project in Godot 2.1.4 or later, use Tools > Export to Godot 3.0, and patch the exported project"
        )
        patches.insert(
            0,
            FilePatch(
                "engine.cfg",
                files["engine.cfg"],
                files["engine.cfg"],
                todos=[Todo("engine.cfg", 1, "godot2-project", "engine.cfg", note)],
            ),
        )
    for path in sorted(p for p in files if p.endswith(".csproj")):
        todo = _csproj_todo(path, files[path])
        if todo is not None:
            patches.append(FilePatch(path, files[path], files[path], todos=[todo]))
    hunks = [h for fp in patches for h in _hunks(fp)]
    return PatchResult(patches, hunks, render_diff(patches, hunks))


def _map_lines(fp: FilePatch) -> dict[int, int]:
    """Patched line -> original line, through the diff's equal blocks (changed lines map to their block start)."""
    if not fp.changed:
        return {}
    total = len(fp.original.splitlines())
    out: dict[int, int] = {}
    old_at = new_at = 0  # 0-based: the next old and new line
    for a, n, new_lines in [*_changes(fp), (total, 0, [])]:
        while old_at < a:  # unchanged lines, one to one
            out[new_at + 1] = old_at + 1
            old_at += 1
            new_at += 1
        for _ in new_lines:
            out[new_at + 1] = a + 1
            new_at += 1
        old_at = a + n
    return out


def basis_lines(result: PatchResult) -> list[dict]:
    """One JSON object per hunk: the changes.basis.jsonl side file."""
    rows = []
    for h in result.hunks:
        rows.append(
            {
                "file": h.path,
                "hunk": f"-{h.old_start},{h.old_len} +{h.new_start},{h.new_len}",
                "old_start": h.old_start,
                "old_len": h.old_len,
                "new_start": h.new_start,
                "new_len": h.new_len,
                "rules": sorted({b.rule for b in h.basis}),
                "record_ids": sorted({b.record_id for b in h.basis if b.record_id}),
                "confidence": round(min((b.confidence for b in h.basis), default=0.0), 3),
                "receivers": sorted({b.receiver for b in h.basis if b.receiver}),
                "changes": [dict(b.as_dict(), line=line) for b, line in zip(h.basis, h.basis_lines, strict=True)],
            }
        )
    return rows


__all__ = [
    "PATCH_VERSION",
    "basis_lines",
    "default_index",
    "patch_file",
    "patch_files",
    "render_diff",
    "residual_godot3",
    "source_kind",
]
