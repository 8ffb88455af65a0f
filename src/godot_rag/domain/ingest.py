"""Input forms -> file records with an include/exclude decision.

Pure functions over bytes and paths; the folder walk in ``scan_folder`` only
reads files. The analysed project is read, never executed.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from godot_rag.domain.ids import sha256_hex

REASON_DOCS = "documentation files are excluded by default in source-analysis mode"
REASON_BINARY = "binary file: only its path is kept; it stays a reference where text chunks name it"
REASON_BINARY_CONTENT = "binary content (NUL bytes or invalid UTF-8) in a file with a text extension"
REASON_CSHARP = "C# source: C# analysis is a later mode; listed but not analysed"
REASON_OTHER_LANG = "source in another language: not analysed in source-analysis mode"
REASON_CACHE = "editor cache folder (.godot/ or .import/): generated, not source"
REASON_GDIGNORE = "folder holds a .gdignore file: Godot ignores it, so does the analysis"
REASON_VCS = "version-control metadata"
REASON_UNKNOWN = "file type not analysed in source-analysis mode"

DOC_EXTENSIONS = {".md", ".txt", ".rst", ".pdf", ".adoc", ".html", ".htm", ".rtf", ".odt", ".docx"}
DOC_BASENAMES = {"license", "licence", "readme", "copying", "authors", "changelog", "contributors", "notice", "credits"}
BINARY_EXTENSIONS = {
    ".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tga", ".gif", ".ico", ".exr", ".hdr", ".svg", ".ktx", ".dds",
    ".ogg", ".wav", ".mp3", ".flac", ".opus",
    ".ttf", ".otf", ".woff", ".woff2", ".fnt",
    ".glb", ".gltf", ".fbx", ".obj", ".dae", ".blend", ".mesh", ".res", ".scn", ".anim",
    ".zip", ".gz", ".tar", ".7z", ".pck", ".so", ".dll", ".dylib", ".exe", ".a", ".wasm", ".jar",
    ".ogv", ".webm", ".mp4", ".stex", ".ctex", ".sample", ".oggvorbisstr",
}
OTHER_LANGUAGE_EXTENSIONS = {
    ".py", ".c", ".h", ".cpp", ".hpp", ".cc", ".js", ".ts", ".rs", ".go", ".java", ".lua", ".sh", ".bat",
    ".ps1", ".swift", ".kt", ".m", ".mm",
}

# source_kind by extension for included text files.
KIND_BY_EXTENSION = {
    ".gd": "gdscript",
    ".tscn": "scene",
    ".escn": "scene",
    ".tres": "resource",
    ".import": "import_meta",
    ".uid": "uid",
    ".cfg": "config",
    ".gdshader": "shader",
    ".shader": "shader",
    ".gdshaderinc": "shader",
    ".godot": "config",
}
KIND_BY_BASENAME = {
    "project.godot": "project_config",
    ".gitignore": "ignore",
    ".gdignore": "ignore",
    ".gitattributes": "ignore",
}

# Which stage cuts a kind: the parser takes GDScript, the chunker the rest.
AST_KINDS = frozenset({"gdscript"})


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
    if suffix == ".cs" or suffix == ".csproj" or suffix == ".sln":
        return "", REASON_CSHARP
    if suffix in BINARY_EXTENSIONS:
        return "", REASON_BINARY
    if suffix in OTHER_LANGUAGE_EXTENSIONS:
        return "", REASON_OTHER_LANG
    return "", f"{REASON_UNKNOWN} ({suffix or name})"


def looks_binary(data: bytes) -> bool:
    """Content test: NUL bytes or bytes that are not UTF-8 mean binary."""
    if b"\0" in data[:65536]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


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
    if looks_binary(data):
        return SourceFile(rel_path, kind, False, REASON_BINARY_CONTENT, size=size)
    return SourceFile(rel_path, kind, True, "", data=data, sha256=sha256_hex(data), size=size)


class IngestError(ValueError):
    """The input as a whole cannot be read (missing path, empty expanded text...)."""


def scan_folder(root: Path, *, max_bytes: int) -> list[SourceFile]:
    """Every file under root in sorted relative-path order, each with a decision.

    Symlinks are not followed: one that points outside the root would let a
    project make the analysis read arbitrary files.
    """
    root = root.resolve()
    if not root.is_dir():
        raise IngestError(f"not a folder: {root}")
    results: list[SourceFile] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        keep: list[str] = []
        for d in sorted(dirnames):
            full = Path(dirpath) / d
            if d == ".git":
                results.append(SourceFile(prefix + d + "/", "", False, REASON_VCS))
            elif d in (".godot", ".import"):
                results.append(SourceFile(prefix + d + "/", "", False, REASON_CACHE))
            elif (full / ".gdignore").exists() and not full.is_symlink():
                results.append(SourceFile(prefix + d + "/", "", False, REASON_GDIGNORE))
            elif full.is_symlink():
                results.append(SourceFile(prefix + d, "", False, "symbolic link to a folder: not followed"))
            else:
                keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            full = Path(dirpath) / f
            rel = prefix + f
            try:
                st = full.lstat()
            except OSError as exc:
                results.append(SourceFile(rel, "", False, f"unreadable: {exc.strerror}"))
                continue
            if stat.S_ISLNK(st.st_mode):
                results.append(SourceFile(rel, "", False, "symbolic link: not followed"))
                continue
            if not stat.S_ISREG(st.st_mode):
                results.append(SourceFile(rel, "", False, "not a regular file (device, socket or pipe)"))
                continue
            if st.st_size > max_bytes:
                kind, _ = classify_path(rel)
                results.append(
                    SourceFile(rel, kind, False, f"oversized: {st.st_size} bytes, over the limit of {max_bytes}", size=st.st_size)
                )
                continue
            try:
                data = full.read_bytes()
            except OSError as exc:
                results.append(SourceFile(rel, "", False, f"unreadable: {exc.strerror}"))
                continue
            results.append(decide(rel, data, max_bytes=max_bytes))
    results.sort(key=lambda s: s.source_file)
    return results


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


def files_from_expanded_text(text: str, *, max_bytes: int) -> list[SourceFile]:
    files = [decide(b.source_file, b.text.encode("utf-8"), max_bytes=max_bytes) for b in split_expanded_text(text)]
    files.sort(key=lambda s: s.source_file)
    return files


def expand(files: list[SourceFile]) -> str:
    """The expanded text of included and text files, for people to inspect."""
    out: list[str] = []
    for f in files:
        if not f.included:
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


SNIPPET_EXTENSION = {"gdscript": ".gd", "scene": ".tscn", "resource": ".tres", "project_config": ".godot", "import_meta": ".import"}
