"""Input forms -> file records with an include/exclude decision.

Pure functions over bytes and paths; the folder walk in ``scan_folder`` only
reads files. The analysed project is read, never executed.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path, PurePosixPath

from godot_rag.domain.ids import sha256_hex
from godot_rag.domain.models import SourceKind
from godot_rag.errors import InvalidInputError

REASON_DOCS = "documentation files are excluded by default in source-analysis mode"
REASON_BINARY = "binary file: only its path is kept; it stays a reference where text chunks name it"
REASON_BINARY_CONTENT = "binary content (NUL bytes or invalid UTF-8) in a file with a text extension"
# The reason of a text file in another encoding (a Windows-1252 comment): where, and what to do about it.
REASON_NOT_UTF8 = (
    "not UTF-8: byte 0x{byte:02X} at line {line}, column {column} is not valid UTF-8 "
    "(a file saved in a legacy encoding such as Windows-1252?); Godot reads text files as UTF-8: "
    "save it as UTF-8 to have it analysed"
)
REASON_CSHARP = "C# source: C# analysis is a later mode; listed but not analysed"
REASON_OTHER_LANG = "source in another language: not analysed in source-analysis mode"
REASON_CACHE = "editor cache folder (.godot/ or .import/): generated, not source"
REASON_GDIGNORE = "folder holds a .gdignore file: Godot ignores it, so does the analysis"
REASON_VCS = "version-control metadata"
REASON_UNKNOWN = "file type not analysed in source-analysis mode"

DOC_EXTENSIONS = {".md", ".txt", ".rst", ".pdf", ".adoc", ".html", ".htm", ".rtf", ".odt", ".docx"}
DOC_BASENAMES = {"license", "licence", "readme", "copying", "authors", "changelog", "contributors", "notice", "credits"}
BINARY_EXTENSIONS = {
    ".png",
    ".jpg",
    ".jpeg",
    ".webp",
    ".bmp",
    ".tga",
    ".gif",
    ".ico",
    ".exr",
    ".hdr",
    ".svg",
    ".ktx",
    ".dds",
    ".ogg",
    ".wav",
    ".mp3",
    ".flac",
    ".opus",
    ".ttf",
    ".otf",
    ".woff",
    ".woff2",
    ".fnt",
    ".glb",
    ".gltf",
    ".fbx",
    ".obj",
    ".dae",
    ".blend",
    ".mesh",
    ".res",
    ".scn",
    ".anim",
    ".zip",
    ".gz",
    ".tar",
    ".7z",
    ".pck",
    ".so",
    ".dll",
    ".dylib",
    ".exe",
    ".a",
    ".wasm",
    ".jar",
    ".ogv",
    ".webm",
    ".mp4",
    ".stex",
    ".ctex",
    ".sample",
    ".oggvorbisstr",
}
OTHER_LANGUAGE_EXTENSIONS = {
    ".py",
    ".c",
    ".h",
    ".cpp",
    ".hpp",
    ".cc",
    ".js",
    ".ts",
    ".rs",
    ".go",
    ".java",
    ".lua",
    ".sh",
    ".bat",
    ".ps1",
    ".swift",
    ".kt",
    ".m",
    ".mm",
}

# source_kind by extension for included text files.
KIND_BY_EXTENSION = {
    ".gd": SourceKind.GDSCRIPT,
    ".tscn": SourceKind.SCENE,
    ".escn": SourceKind.SCENE,
    ".tres": SourceKind.RESOURCE,
    ".import": SourceKind.IMPORT_META,
    ".uid": SourceKind.UID,
    ".cfg": SourceKind.CONFIG,
    ".gdshader": SourceKind.SHADER,
    ".shader": SourceKind.SHADER,
    ".gdshaderinc": SourceKind.SHADER,
    ".godot": SourceKind.CONFIG,
    # Native code: a GDNative library (Godot 3) or a GDExtension (Godot 4) is an INI file; a NativeScript
    # (Godot 3) a text resource. Which one a project has says which version its native code builds for.
    ".gdnlib": SourceKind.CONFIG,
    ".gdextension": SourceKind.CONFIG,
    ".gdns": SourceKind.RESOURCE,
    # A C# project's file: its Godot SDK (Godot.NET.Sdk/3.x or 4.x, or Godot 3.0-3.2's GodotSharp
    # references) says which version the C# scripts build against. Cut as text; the .cs files stay excluded.
    ".csproj": SourceKind.TEXT,
}
KIND_BY_BASENAME = {
    "project.godot": SourceKind.PROJECT_CONFIG,
    ".gitignore": SourceKind.IGNORE,
    ".gdignore": SourceKind.IGNORE,
    ".gitattributes": SourceKind.IGNORE,
}

# Which stage cuts a kind: the parser takes GDScript, the chunker the rest.
AST_KINDS = frozenset({SourceKind.GDSCRIPT})


@dataclass(frozen=True)
class SourceFile:
    """One file of the input with its include/exclude decision."""

    source_file: str  # project-relative POSIX path
    source_kind: str  # "" when excluded before kind detection
    included: bool
    excluded_reason: str = ""
    data: bytes = b""  # empty when excluded
    sha256: str = ""
    size: int = 0
    # Excluded by the policy but text: ``data`` holds it for `expand` (only when decided with keep_text).
    has_text: bool = False
    # Decided without holding the bytes (``hold_data=False``): reads them again from the input, one
    # file at a time, so a submission never holds a whole project (see pipeline/submit.py).
    read: Callable[[], bytes] | None = field(default=None, compare=False, repr=False)


def classify_path(rel_path: str) -> tuple[str, str]:
    """(source_kind, excluded_reason) from the path alone; one of them is empty."""
    p = PurePosixPath(rel_path)
    name = p.name
    lower = name.lower()
    suffix = p.suffix.lower()
    if name in KIND_BY_BASENAME:
        return KIND_BY_BASENAME[name], ""
    if suffix in KIND_BY_EXTENSION:
        return KIND_BY_EXTENSION[suffix], ""
    stem = lower.split(".", 1)[0]
    if suffix in DOC_EXTENSIONS or stem in DOC_BASENAMES:
        return "", REASON_DOCS
    if suffix == ".cs" or suffix == ".sln":
        return "", REASON_CSHARP
    if suffix in BINARY_EXTENSIONS:
        return "", REASON_BINARY
    if suffix in OTHER_LANGUAGE_EXTENSIONS:
        return "", REASON_OTHER_LANG
    return "", f"{REASON_UNKNOWN} ({suffix or name})"


def looks_binary(data: bytes) -> bool:
    """Content test: NUL bytes or bytes that are not UTF-8 mean binary."""
    return bool(binary_content_reason(data))


def binary_content_reason(data: bytes) -> str:
    """Why the content is not analysed as text ("" when it is text): NUL bytes mean a binary file; otherwise the
    first byte that is not UTF-8, by line and column, so that a text file saved in another encoding can be fixed."""
    if b"\0" in data:
        return REASON_BINARY_CONTENT
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return REASON_NOT_UTF8.format(byte=data[exc.start], line=line, column=column)
    return ""


def decide(rel_path: str, data: bytes, *, max_bytes: int) -> SourceFile:
    kind, reason = classify_path(rel_path)
    size = len(data)
    if reason:
        if reason.startswith(REASON_UNKNOWN) and not looks_binary(data):
            return SourceFile(rel_path, "", False, reason, size=size)
        if reason.startswith(REASON_UNKNOWN):
            return SourceFile(rel_path, "", False, REASON_BINARY, size=size)
        return SourceFile(rel_path, "", False, reason, size=size)
    if size > max_bytes:
        return SourceFile(rel_path, kind, False, f"oversized: {size} bytes, over the limit of {max_bytes}", size=size)
    if binary := binary_content_reason(data):
        return SourceFile(rel_path, kind, False, binary, size=size)
    return SourceFile(rel_path, kind, True, "", data=data, sha256=sha256_hex(data), size=size)


class IngestError(InvalidInputError):
    """The input as a whole cannot be read (missing path, empty expanded text...)."""


# ---- The tree of one input: every entry it holds, before any decision.

ENTRY_FILE = "file"  # a regular file; ``read`` returns its bytes
ENTRY_SYMLINK = "symlink"  # a symbolic link (to a file or a folder); never followed
ENTRY_SPECIAL = "special"  # device, socket or pipe
ENTRY_EXCLUDED = "excluded"  # decided before the policy ran (cache folder, submodule...); ``reason`` says why

REASON_NESTED_PROJECT = "folder holds its own project.godot: analysed as a separate project"
REASON_SPECIAL = "not a regular file (device, socket or pipe)"
REASON_SYMLINK_INSIDE = "symbolic link: not followed; its target {target!r} is analysed under its own path"
REASON_SYMLINK_OUTSIDE = "symbolic link leading outside the project root ({target!r}): refused, never followed"

CACHE_DIRS = frozenset({".godot", ".import"})
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass(frozen=True)
class TreeEntry:
    """One entry of an input tree: a folder walk, an extracted archive, expanded text."""

    path: str  # relative POSIX path from the input root; folder markers end with "/"
    kind: str  # ENTRY_FILE, ENTRY_SYMLINK, ENTRY_SPECIAL, ENTRY_EXCLUDED
    size: int = 0
    reason: str = ""  # ENTRY_EXCLUDED only
    link_target: str = ""  # ENTRY_SYMLINK only, as stored in the link
    read: Callable[[], bytes] | None = None  # ENTRY_FILE only; may raise OSError


@dataclass(frozen=True)
class ProjectFiles:
    """The files of one project root of an input."""

    root: str  # folder of its project.godot relative to the input root; "" = the input root itself
    files: list[SourceFile]  # paths relative to ``root``, sorted


def _parent(path: str) -> str:
    return posixpath.dirname(path.rstrip("/"))


def _under(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


def _relative(path: str, folder: str) -> str:
    return path if folder == "" else path[len(folder) + 1 :]


def _utf8_name(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def find_project_roots(entries: list[TreeEntry]) -> list[str]:
    """Folders (input-relative, "" = top) that hold a project.godot regular file, sorted."""
    roots = {_parent(e.path) for e in entries if e.kind == ENTRY_FILE and posixpath.basename(e.path) == "project.godot"}
    # A project.godot inside an editor cache or VCS folder is not a project.
    return sorted(r for r in roots if not (set(r.split("/")) & (CACHE_DIRS | VCS_DIRS)))


def _owner(path: str, roots: list[str]) -> str | None:
    best: str | None = None
    for r in roots:
        if _under(path.rstrip("/"), r) and (best is None or len(r) > len(best)):
            best = r
    return best


def _gdignored(rel: str, gdignore_dirs: set[str]) -> bool:
    """Whether a folder above ``rel`` (inside the project, not its root) holds a .gdignore.

    The .gdignore file itself stays included for direct chunking (the design's
    policy table) unless a folder further up is ignored too.
    """
    name = posixpath.basename(rel.rstrip("/"))
    folder = _parent(rel)
    while folder:
        if folder in gdignore_dirs and not (name == ".gdignore" and folder == _parent(rel)):
            return True
        folder = posixpath.dirname(folder)
    return False


def _decide_entry(
    rel: str, entry: TreeEntry, project_root: str, *, max_bytes: int, keep_text: bool, hold_data: bool = True
) -> SourceFile:
    if entry.kind == ENTRY_EXCLUDED:
        kind = "" if rel.endswith("/") else classify_path(rel)[0]
        return SourceFile(rel, kind, False, entry.reason, size=entry.size)
    folders = set(rel.split("/")[:-1])
    if folders & VCS_DIRS:
        return SourceFile(rel, "", False, REASON_VCS, size=entry.size)
    if folders & CACHE_DIRS:
        return SourceFile(rel, "", False, REASON_CACHE, size=entry.size)
    if entry.kind == ENTRY_SPECIAL:
        return SourceFile(rel, "", False, REASON_SPECIAL)
    if entry.kind == ENTRY_SYMLINK:
        target = entry.link_target
        resolved = None if target.startswith("/") else posixpath.normpath(posixpath.join(_parent(entry.path), target))
        inside = resolved is not None and resolved != ".." and not resolved.startswith("../")
        if inside and _under("" if resolved == "." else str(resolved), project_root):
            return SourceFile(rel, "", False, REASON_SYMLINK_INSIDE.format(target=target))
        return SourceFile(rel, "", False, REASON_SYMLINK_OUTSIDE.format(target=target))
    kind, reason = classify_path(rel)
    size = entry.size
    by_path = bool(reason) and not reason.startswith(REASON_UNKNOWN)
    if reason == REASON_BINARY or (by_path and not keep_text):
        # Assets, documentation, C#, other languages: decided by the path, never read.
        return SourceFile(rel, "", False, reason, size=size)
    if size > max_bytes:
        why = reason if by_path else f"oversized: {size} bytes, over the limit of {max_bytes}"
        return SourceFile(rel, kind, False, why, size=size)
    try:
        data = entry.read() if entry.read is not None else b""
    except OSError as exc:
        return SourceFile(rel, "", False, f"unreadable: {exc.strerror or exc}", size=size)
    decided = decide(rel, data, max_bytes=max_bytes)
    if decided.included and not hold_data and entry.read is not None:
        # Decided (kind, sha256) and let go: the bytes are read again when they are stored.
        return replace(decided, data=b"", read=entry.read)
    if keep_text and reason and not looks_binary(data):
        # Text the policy excludes keeps its bytes for `expand`, never for the pipeline.
        return replace(decided, data=data, has_text=True)
    return decided


def decide_tree(entries: list[TreeEntry], *, max_bytes: int, keep_text: bool = False, hold_data: bool = True) -> list[ProjectFiles]:
    """Split an input tree into its project roots and decide every entry.

    - Every folder with a project.godot is a project root (a demo collection
      holds many); a file belongs to the deepest root above it.
    - Without any project.godot the whole input is one project at its top.
    - Entries outside every root form a project at the input's top (root ""),
      which also lists each nested root as an excluded folder, so every entry
      of the input shows up in exactly one project's file list.
    - ``.gdignore`` and the cache folders are applied inside each project.

    ``keep_text`` keeps the bytes of text files that the policy excludes
    (documentation, C#...), for ``expand``; submissions leave it off.
    ``hold_data=False`` reads each file once to decide it and keeps only its
    sha256 and a reader (``SourceFile.read``), not its bytes.
    """
    by_path: dict[str, TreeEntry] = {}
    for e in entries:
        if not _utf8_name(e.path):
            # Names come from the file system as bytes; one that is not UTF-8 cannot travel in the
            # API or the store, so it is listed under a readable form of its name, unread.
            shown = e.path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            e = TreeEntry(shown, ENTRY_EXCLUDED, size=e.size, reason="file name is not valid UTF-8: not read")
        if e.path in by_path:
            raise IngestError(f"{e.path!r} appears twice in the input")
        by_path[e.path] = e
    ordered = [by_path[p] for p in sorted(by_path)]
    roots = find_project_roots(ordered) or [""]
    owned: dict[str, list[TreeEntry]] = {r: [] for r in roots}
    leftovers: list[TreeEntry] = []
    for e in ordered:
        owner = _owner(e.path, roots)
        if owner is None:
            leftovers.append(e)
        else:
            owned[owner].append(e)
    if leftovers:
        roots = ["", *roots]
        owned[""] = leftovers
    # Each nested root is listed, as a folder, in the project right above it.
    for r in roots:
        if r == "":
            continue
        parent = _owner(_parent(r), [x for x in roots if x != r])
        if parent is not None:
            owned[parent].append(TreeEntry(r + "/", ENTRY_EXCLUDED, reason=REASON_NESTED_PROJECT))
    projects: list[ProjectFiles] = []
    for r in roots:
        rels = [(_relative(e.path, r), e) for e in owned[r]]
        gdignore_dirs = {
            _parent(rel) for rel, e in rels if e.kind == ENTRY_FILE and posixpath.basename(rel) == ".gdignore" and _parent(rel)
        }
        files: list[SourceFile] = []
        for rel, e in rels:
            if _gdignored(rel, gdignore_dirs) and e.reason != REASON_NESTED_PROJECT:
                files.append(SourceFile(rel, "", False, REASON_GDIGNORE, size=e.size))
            else:
                files.append(_decide_entry(rel, e, r, max_bytes=max_bytes, keep_text=keep_text, hold_data=hold_data))
        files.sort(key=lambda s: s.source_file)
        projects.append(ProjectFiles(r, files))
    return projects


def flatten(projects: list[ProjectFiles]) -> list[SourceFile]:
    """All files of all projects with input-relative paths, sorted (nested-root markers dropped)."""
    out: list[SourceFile] = []
    for p in projects:
        for f in p.files:
            if f.excluded_reason == REASON_NESTED_PROJECT:
                continue
            path = f.source_file if p.root == "" else f"{p.root}/{f.source_file}"
            out.append(replace(f, source_file=path))
    out.sort(key=lambda s: s.source_file)
    return out


def _read_regular(path: str) -> bytes:
    """Read a file without following a symlink swapped in after the walk looked at it."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "no longer a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


@dataclass(frozen=True)
class WalkLimits:
    """What one folder walk may list and (later) read; an IngestError past either."""

    max_entries: int = 100_000
    max_bytes: int = 512 * 1024 * 1024  # sizes of the files the policy may read (not assets decided by path)


def readable_by_policy(rel_path: str) -> bool:
    """Whether the policy may read this file's bytes (assets, docs, C#... are decided by the path alone)."""
    _, reason = classify_path(rel_path)
    return not reason or reason.startswith(REASON_UNKNOWN)


def walk_folder(root: Path, limits: WalkLimits | None = None) -> list[TreeEntry]:
    """Every entry under root, without following any symbolic link.

    Editor caches (.godot/, .import/) and VCS folders become one excluded
    folder entry each and are not descended. Files are read later, and only
    those the policy needs. ``limits`` bounds the entries listed and the bytes
    of the files that may be read: a huge folder is refused, not half-listed.
    """
    limits = limits or WalkLimits()
    total = 0
    root = root.resolve()
    if not root.is_dir():
        raise IngestError(f"not a folder: {root}")
    entries: list[TreeEntry] = []
    root_str = str(root)

    def rel_of(full: str) -> str:
        return Path(full).relative_to(root).as_posix()

    def on_error(exc: OSError) -> None:
        if exc.filename and exc.filename != root_str:
            entries.append(TreeEntry(rel_of(exc.filename) + "/", ENTRY_EXCLUDED, reason=f"unreadable folder: {exc.strerror}"))
        elif exc.filename == root_str:
            raise IngestError(f"cannot read {root}: {exc.strerror}") from exc

    def link_target(full: str) -> str:
        target = os.readlink(full)
        # An absolute link into the root itself is judged like the relative one.
        if target.startswith(root_str + "/"):
            target = os.path.relpath(target, os.path.dirname(full))
        return target

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=on_error):
        keep: list[str] = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            rel = rel_of(full)
            if os.path.islink(full):
                entries.append(TreeEntry(rel, ENTRY_SYMLINK, link_target=link_target(full)))
            elif d in VCS_DIRS:
                entries.append(TreeEntry(rel + "/", ENTRY_EXCLUDED, reason=REASON_VCS))
            elif d in CACHE_DIRS:
                entries.append(TreeEntry(rel + "/", ENTRY_EXCLUDED, reason=REASON_CACHE))
            else:
                keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            full = os.path.join(dirpath, f)
            rel = rel_of(full)
            try:
                st = os.lstat(full)
            except OSError as exc:
                entries.append(TreeEntry(rel, ENTRY_EXCLUDED, reason=f"unreadable: {exc.strerror}"))
                continue
            if stat.S_ISLNK(st.st_mode):
                entries.append(TreeEntry(rel, ENTRY_SYMLINK, link_target=link_target(full)))
            elif not stat.S_ISREG(st.st_mode):
                entries.append(TreeEntry(rel, ENTRY_SPECIAL))
            else:
                entries.append(TreeEntry(rel, ENTRY_FILE, size=st.st_size, read=partial(_read_regular, full)))
                if readable_by_policy(rel):
                    total += st.st_size
                    if total > limits.max_bytes:
                        raise IngestError(
                            f"{root}: the files to read pass the limit of {limits.max_bytes} bytes "
                            f"(at {rel}); analyse a smaller folder or raise GODOT_RAG_WALK_MAX_BYTES"
                        )
        if len(entries) > limits.max_entries:
            raise IngestError(
                f"{root}: more than {limits.max_entries} entries; analyse a smaller folder or raise GODOT_RAG_WALK_MAX_ENTRIES"
            )
    return entries


def scan_projects(
    root: Path,
    *,
    max_bytes: int,
    keep_text: bool = False,
    extra: list[TreeEntry] | None = None,
    limits: WalkLimits | None = None,
    hold_data: bool = True,
) -> list[ProjectFiles]:
    """The projects of a folder; ``extra`` adds entries decided elsewhere (e.g. a git submodule)."""
    return decide_tree([*walk_folder(root, limits), *(extra or [])], max_bytes=max_bytes, keep_text=keep_text, hold_data=hold_data)


def scan_folder(root: Path, *, max_bytes: int) -> list[SourceFile]:
    """Every file under root in sorted relative-path order, each with a decision.

    Symlinks are not followed: one that points outside the root would let a
    project make the analysis read arbitrary files. Paths are relative to
    ``root`` even when it holds several project roots (see ``scan_projects``).
    """
    return flatten(scan_projects(root, max_bytes=max_bytes))


# ---- The expanded text form: "# <relative/path>" headers, one blank line between files.

_HEADER_RE = re.compile(r"^# (\S(?:.*\S)?)$")
_KNOWN_EXTENSIONLESS = {"license", "licence", "readme", "makefile", "copying", "authors", "changelog", "dockerfile"}


def _is_header_path(candidate: str) -> bool:
    if candidate.startswith("/") or "\\" in candidate:
        return False
    parts = candidate.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    name = parts[-1]
    if name.startswith(".") and len(name) > 1:
        return True  # .gitignore, .gdignore
    if re.search(r"\.[A-Za-z0-9_]{1,12}$", name):
        return True
    return name.lower() in _KNOWN_EXTENSIONLESS


@dataclass(frozen=True)
class ExpandedBlock:
    source_file: str
    header_line: int  # 1-based line of the "# path" header in the expanded text
    text: str


def split_expanded_text(text: str) -> list[ExpandedBlock]:
    """Split the expanded form into per-file blocks.

    A header is a line "# <path>" at the very start or right after a blank
    line, whose path looks like a relative file path. That is what keeps a
    Markdown title right under "# README.md" (no blank line before it) or a
    GDScript comment inside a function from being read as a file boundary.
    The blank line that ends a block (before the next header, or at the end
    of the text as ``expand`` writes it) is a separator, not content.
    """
    text = text.replace("\r\n", "\n") if "\r\n" in text and "\n" not in text.replace("\r\n", "") else text
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    headers: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        m = _HEADER_RE.match(line)
        if not m or not _is_header_path(m.group(1)):
            continue
        if i == 0 or lines[i - 1].strip() == "":
            headers.append((i, m.group(1)))
    if not headers:
        raise IngestError("no '# <relative/path>' file header found in the expanded text")
    blocks: list[ExpandedBlock] = []
    seen: set[str] = set()
    for n, (i, path) in enumerate(headers):
        end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        body = lines[i + 1 : end]
        if body and body[-1] == "":
            body = body[:-1]
        content = "\n".join(body) + "\n" if body else ""
        if path in seen:
            raise IngestError(f"file {path!r} appears twice in the expanded text (line {i + 1})")
        seen.add(path)
        blocks.append(ExpandedBlock(path, i + 1, content))
    return blocks


def expanded_entries(text: str) -> list[TreeEntry]:
    """The files of an expanded text as tree entries (it holds text files only, no folders or links)."""
    entries: list[TreeEntry] = []
    for b in split_expanded_text(text):
        data = b.text.encode("utf-8")
        entries.append(TreeEntry(b.source_file, ENTRY_FILE, size=len(data), read=partial(bytes, data)))
    return entries


def projects_from_expanded_text(text: str, *, max_bytes: int, keep_text: bool = False) -> list[ProjectFiles]:
    return decide_tree(expanded_entries(text), max_bytes=max_bytes, keep_text=keep_text)


def files_from_expanded_text(text: str, *, max_bytes: int) -> list[SourceFile]:
    return flatten(projects_from_expanded_text(text, max_bytes=max_bytes))


def expand(files: list[SourceFile]) -> str:
    """The expanded text of every file that has text, for people to inspect.

    Like the design's worked example project it shows documentation and other
    text the policy excludes as well (when the files were decided with
    ``keep_text``); binaries, caches, links and unreadable files have no text
    and are only listed by the caller. Reading the result back gives the same
    decisions.
    """
    out: list[str] = []
    for f in files:
        if not f.included and not f.has_text:
            continue
        body = f.data.decode("utf-8")
        out.append(f"# {f.source_file}\n{body}")
        if body and not body.endswith("\n"):
            out.append("\n")
        out.append("\n")
    return "".join(out)


def guess_snippet_kind(text: str) -> str:
    """source_kind of a pasted snippet, from its content."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("[gd_scene"):
        return "scene"
    if stripped.startswith("[gd_resource"):
        return "resource"
    if "config_version=" in text and re.search(r"^\[application\]", text, re.M):
        return "project_config"
    if stripped.startswith("[remap]"):
        return "import_meta"
    return "gdscript"


SNIPPET_EXTENSION = {
    "gdscript": ".gd",
    "scene": ".tscn",
    "resource": ".tres",
    "project_config": ".godot",
    "import_meta": ".import",
    "uid": ".uid",
    "config": ".cfg",
    "shader": ".gdshader",
}
ANALYSED_KINDS = frozenset(KIND_BY_EXTENSION.values()) | frozenset(KIND_BY_BASENAME.values())


def decide_snippet(name: str, kind: str, data: bytes, *, max_bytes: int) -> SourceFile:
    """A pasted file: its kind is given or guessed, so only its content and size decide."""
    size = len(data)
    if kind not in ANALYSED_KINDS:
        return SourceFile(name, kind, False, f"source_kind {kind!r} is not analysed in source-analysis mode", size=size)
    if size > max_bytes:
        return SourceFile(name, kind, False, f"oversized: {size} bytes, over the limit of {max_bytes}", size=size)
    if binary := binary_content_reason(data):
        return SourceFile(name, kind, False, binary, size=size)
    return SourceFile(name, kind, True, "", data=data, sha256=sha256_hex(data), size=size)


def check_source_file(path: str) -> str:
    """A caller-given ``source_file``: a relative POSIX path inside its project, or InvalidInputError.

    It is a name (chunk ids and stored rows carry it), never opened; refusing
    absolute paths and ``..`` keeps every id and link inside its project.
    """
    if not path:
        raise InvalidInputError("source_file is required")
    if "\0" in path or "\\" in path:
        raise InvalidInputError(f"source_file {path!r}: NUL or backslash in the path")
    if path.startswith("/") or (len(path) >= 2 and path[1] == ":" and path[0].isalpha()):
        raise InvalidInputError(f"source_file {path!r}: an absolute path (give the path relative to the project)")
    if any(part == ".." for part in path.split("/")):
        raise InvalidInputError(f"source_file {path!r}: '..' leads outside the project")
    return path
