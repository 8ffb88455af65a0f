"""The patch stage's I/O: read a project, patch it (domain.patching), write the diff, the basis file, or the files.

``patch_project(files)`` is the entry point for any caller that already holds
the files; ``patch_analysis(store, analysis_id)`` is the gateway's (the files
and project index stored with an analysis); ``read_project`` /
``write_outputs`` / ``apply_patch`` / ``apply_changes`` are what the CLI adds
around them.

Safety of ``apply_patch`` and ``apply_changes``:

- a project inside a git work tree with uncommitted changes is refused, and so
  is a folder that is not under git at all (nothing to go back to), unless
  forced;
- every target is resolved and must be a regular file inside the project
  root: a symlink, or a path whose folders lead out of the root, is refused;
- a file whose content changed since it was read (or, for a stored analysis,
  whose sha256 is not the analysed content's) is refused (the patch was made
  for the old text);
- all checks run before the first write; each file is then replaced
  atomically (temporary file in the same folder, fsync, rename).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from godot_rag.domain.ingest.policy import IngestError, files_from_expanded_text, scan_folder
from godot_rag.domain.patching import PatchResult, basis_lines, patch_files, patch_reads
from godot_rag.domain.patching.engine import default_index
from godot_rag.domain.patching.knowledge import shipped_knowledge
from godot_rag.errors import InvalidInputError, NotFoundError
from godot_rag.infra.worktree import contained_path, git_status, write_atomic

if TYPE_CHECKING:
    from godot_rag.infra.store import Store

BASIS_SUFFIX = ".basis.jsonl"
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024


class PatchRefused(InvalidInputError):
    """--apply will not write: dirty tree, no git, a path outside the project, or a file changed meanwhile."""


def patch_project(files: Mapping[str, str], index_json: str = "") -> PatchResult:
    """Patch a project given as {project-relative path: text} (for any caller that holds the files).

    ``index_json`` is the project index stored with an analysis (the one the rules judge used); without it,
    or when it is of another version, the index is built from ``files``.
    """
    knowledge = shipped_knowledge()
    return patch_files(files, knowledge, default_index(files, knowledge, index_json))


@dataclass(frozen=True)
class AnalysisPatch:
    """The patch of a stored analysis, and the sha256 of each file's analysed content (what --apply compares)."""

    analysis_id: str
    result: PatchResult
    sha256: dict[str, str] = field(default_factory=dict)


async def patch_analysis(store: Store, analysis_id: str) -> AnalysisPatch:
    """Patch the files stored with an analysis (their content blobs), with the project index stored beside them."""
    if await store.get_analysis(analysis_id) is None:
        raise NotFoundError(f"no analysis {analysis_id}")
    files: dict[str, str] = {}
    shas: dict[str, str] = {}
    for row in await store.list_files(analysis_id):
        path = row.source_file
        if not row.included or not patch_reads(path):
            continue
        data = await store.get_blob(row.sha256)
        if data is None:
            continue  # a file row without its content (never the case for an included file): nothing to patch
        try:
            files[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # the ingest policy includes text only; a blob that is not UTF-8 is not a script
        shas[path] = row.sha256
    index_json = await store.get_project_symbols(analysis_id)
    # Patching parses every script: CPU work kept off the gateway's event loop.
    result = await asyncio.to_thread(patch_project, files, index_json)
    return AnalysisPatch(analysis_id, result, shas)


# An analysis's files and index never change under its id, so its patch (by this code's rules) does not either:
# the web screen's file pages reuse one computation per analysis instead of re-patching the project per page.
_DOC_CACHE: OrderedDict[str, dict] = OrderedDict()
_DOC_CACHE_SIZE = 8


async def analysis_patch_doc(store: Store, analysis_id: str) -> dict:
    """``patch_result_json`` of an analysis's patch, remembered for the last few analyses."""
    doc = _DOC_CACHE.get(analysis_id)
    if doc is None:
        doc = patch_result_json((await patch_analysis(store, analysis_id)).result)
        _DOC_CACHE[analysis_id] = doc
        while len(_DOC_CACHE) > _DOC_CACHE_SIZE:
            _DOC_CACHE.popitem(last=False)
    _DOC_CACHE.move_to_end(analysis_id)
    return doc


def basis_jsonl(result: PatchResult) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in basis_lines(result))


def read_project(root: Path, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> dict[str, str]:
    """The files the patch handles (.gd, .tscn, .tres, project.godot), by project-relative path.

    ``root`` is a project folder or a file in the expanded '# <relative/path>' text form.
    The ingest policy decides what is read: no symlink is followed, caches and
    VCS folders are skipped, binary and oversized files are left out.
    """
    root = Path(root)
    if root.is_file():
        # The expanded '# <relative/path>' text form: a diff can be made, nothing can be applied.
        try:
            text = root.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{root}: not UTF-8 text") from exc
        try:
            sources = files_from_expanded_text(text, max_bytes=max_bytes)
        except IngestError as exc:
            raise InvalidInputError(f"{root}: {exc}") from exc
    elif root.is_dir():
        try:
            sources = scan_folder(root, max_bytes=max_bytes)
        except IngestError as exc:
            raise InvalidInputError(str(exc)) from exc
    else:
        raise InvalidInputError(f"not a folder or an expanded-text file: {root}")
    files: dict[str, str] = {}
    for f in sources:
        if f.included and patch_reads(f.source_file):
            files[f.source_file] = f.data.decode("utf-8")
    return files


def basis_path_for(diff_path: Path) -> Path:
    """changes.diff -> changes.basis.jsonl (beside the diff)."""
    return diff_path.with_name(diff_path.name.rsplit(".", 1)[0] + BASIS_SUFFIX)


def write_outputs(result: PatchResult, diff_path: Path) -> tuple[Path, Path]:
    """Write the unified diff and its changes.basis.jsonl side file (one JSON object per hunk)."""
    diff_path = Path(diff_path)
    basis_path = basis_path_for(diff_path)
    diff_path.parent.mkdir(parents=True, exist_ok=True)
    diff_path.write_text(result.diff, encoding="utf-8")
    basis_path.write_text(basis_jsonl(result), encoding="utf-8")
    return diff_path, basis_path


def todos_json(result: PatchResult) -> list[dict]:
    return [t.as_dict() for t in result.todos]


def patch_result_json(result: PatchResult) -> dict:
    """The whole result as plain data, per file (for an RPC or a per-file view): diff text, hunks with their
    basis, TODOs and the engine-named project members that were kept."""
    by_file: dict[str, list[dict]] = {}
    for row in basis_lines(result):
        by_file.setdefault(row["file"], []).append(row)
    hunk_text = {(h.path, h.old_start, h.new_start): h.text for h in result.hunks}
    files = []
    for f in result.files:
        hunks = [dict(row, text=hunk_text[(f.path, row["old_start"], row["new_start"])]) for row in by_file.get(f.path, [])]
        files.append(
            {
                "file": f.path,
                "changed": f.changed,
                "edits": len(f.edits),
                "hunks": hunks,
                "todos": [t.as_dict() for t in f.todos],
                "kept": [{"line": k.line, "symbol": k.symbol, "reason": k.reason} for k in f.kept],
                "patched": f.patched if f.changed else "",
            }
        )
    return {"summary": result.summary(), "files": files, "diff": result.diff}


@dataclass(frozen=True)
class FileChange:
    """One file to write: its project-relative path, the sha256 of the content the patch was made for, the new bytes."""

    path: str
    expected_sha256: str
    data: bytes


@dataclass(frozen=True)
class Applied:
    written: list[str]
    git_dirty: list[str]  # porcelain lines that were overridden with force ([] when clean or not forced)
    under_git: bool


def apply_patch(root: Path, result: PatchResult, *, force: bool = False) -> Applied:
    """Write the patched files into ``root`` (see the module docstring for the checks)."""
    changes = [
        FileChange(fp.path, hashlib.sha256(fp.original.encode("utf-8")).hexdigest(), fp.patched.encode("utf-8"))
        for fp in result.files
        if fp.changed
    ]
    return apply_changes(root, changes, force=force)


def apply_changes(root: Path, changes: Sequence[FileChange], *, force: bool = False) -> Applied:
    """Write ``changes`` into the project folder ``root``: every check first, then one atomic write per file.

    A file whose current content does not hash to ``expected_sha256`` is refused: the patch was made for
    other text (the file changed since it was read, or since the analysis stored it).
    """
    root = Path(root)
    if not root.is_dir():
        raise PatchRefused(f"{root} is not a folder: --apply writes into a project folder only")
    status = git_status(root)
    if status is None and not force:
        raise PatchRefused(
            f"{root} is not inside a git work tree: nothing to go back to if the patch is wrong "
            "(commit the project first, or use --force)"
        )
    if status and not force:
        shown = "\n  ".join(status[:10])
        raise PatchRefused(f"{root} has uncommitted changes; commit or stash them first, or use --force:\n  {shown}")
    targets: list[tuple[Path, bytes, str]] = []
    for change in changes:
        target = contained_path(root, change.path)
        if target is None:
            raise PatchRefused(f"{change.path}: not a regular file inside {root.resolve()} (a link, or outside the project)")
        if hashlib.sha256(target.read_bytes()).hexdigest() != change.expected_sha256:
            raise PatchRefused(
                f"{change.path} is not the content the patch was made for (it changed since it was "
                "read or analysed); run the patch again"
            )
        targets.append((target, change.data, change.path))
    for target, data, _ in targets:
        write_atomic(target, data)
    return Applied([rel for _, _, rel in targets], status if (status and force) else [], status is not None)
