"""Bring a git repository or an uploaded archive into a working folder, safely.

Everything is written under one fresh folder below ``Settings.work_dir``
and removed when the caller's ``with`` block ends; the project is read,
never executed:

- Every write goes through a chain of directory file descriptors opened with
  O_NOFOLLOW, files are created with O_EXCL: no entry can write through a
  link or over another entry, whatever the archive or the timing.
- Symbolic links are never created. They are handed back as tree entries, so
  the scan lists them (and never follows them); an archive whose link points
  outside its own tree is refused as a whole (``archive.resolve_link``).
- Files over ``max_file_bytes`` are not written either; they come back as
  entries that the policy lists as oversized.
- git runs with hooks off, no terminal prompts, no submodule recursion, no
  checkout (blobs are read from the object store with ``cat-file``, so no
  smudge filter or eol conversion touches them), fsck on transfer, the
  ``ext::`` transport off, and a deadline.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import io
import lzma
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from godot_rag.domain.ingest.archive import (
    DIR,
    HARDLINK,
    SYMLINK,
    ArchiveEntry,
    ArchiveError,
    ArchiveLimits,
    Budget,
    detect_format,
    resolve_link,
    safe_relative_path,
    tar_entry,
    zip_entry,
    zip_is_symlink,
)
from godot_rag.domain.ingest.policy import (
    ENTRY_EXCLUDED,
    ENTRY_FILE,
    ENTRY_SYMLINK,
    IngestError,
    TreeEntry,
    WalkLimits,
    readable_by_policy,
    walk_folder,
)
from godot_rag.domain.redact import redact_credentials

CHUNK = 1 << 16
MAX_LINK_TARGET = 4096


class FetchError(IngestError):
    """A git repository could not be fetched (unreachable, unknown ref, refused URL, timeout)."""


@contextmanager
def working_folder(work_root: Path, prefix: str) -> Iterator[Path]:
    """A fresh private folder under work_root, removed afterwards (also on errors)."""
    work_root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=work_root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------- the writer


class SafeTree:
    """Writes files below one root and nowhere else."""

    def __init__(self, root: Path, budget: Budget):
        self.root = root
        self.budget = budget
        self.root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)

    def close(self) -> None:
        os.close(self.root_fd)

    def __enter__(self) -> SafeTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _dir_fd(self, parts: list[str], *, create: bool) -> int:
        """fd of root/parts..., each component a real folder (never a link)."""
        fd = os.dup(self.root_fd)
        try:
            for part in parts:
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise ArchiveError(f"entry path passes through {part!r}, which is not a folder") from exc
                    raise
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def mkdir(self, path: str) -> None:
        try:
            os.close(self._dir_fd(path.split("/"), create=True))
        except OSError as exc:
            raise ArchiveError(f"archive entry {path!r}: folder cannot be created ({exc.strerror})") from exc

    def write(self, path: str, chunks: Iterable[bytes], *, declared: int | None = None, count: bool = True) -> int:
        parts = path.split("/")
        try:
            dfd = self._dir_fd(parts[:-1], create=True)
            try:
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
            finally:
                os.close(dfd)
        except FileExistsError as exc:
            raise ArchiveError(f"archive entry {path!r} appears twice (or clashes with a folder)") from exc
        except OSError as exc:
            # A name too long for the file system and the like: the archive's fault, named as such.
            raise ArchiveError(f"archive entry {path!r}: cannot be written ({exc.strerror})") from exc
        written = 0
        with os.fdopen(fd, "wb") as out:
            for block in chunks:
                written += len(block)
                if declared is not None and written > declared:
                    raise ArchiveError(f"archive entry {path!r} inflates beyond its declared size of {declared} bytes")
                if count:
                    self.budget.add_bytes(len(block), path)
                out.write(block)
        return written

    def read(self, path: str) -> bytes:
        parts = path.split("/")
        dfd = self._dir_fd(parts[:-1], create=False)
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
        finally:
            os.close(dfd)
        with os.fdopen(fd, "rb") as fh:
            return fh.read()


def _blocks(stream: IO[bytes]) -> Iterator[bytes]:
    while True:
        block = stream.read(CHUNK)
        if not block:
            return
        yield block


# ---------------------------------------------------------------- archives


class _CountingReader(io.RawIOBase):
    """Counts the decompressed bytes a tar reader pulls through; the budget stops a bomb mid-stream."""

    def __init__(self, inner, budget: Budget):
        self.inner = inner
        self.budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        data = self.inner.read(len(b))
        if data:
            self.budget.add_bytes(len(data), "(decompressed stream)")
        n = len(data)
        b[:n] = data
        return n


def _oversized_entry(path: str, size: int) -> TreeEntry:
    # read=None: the policy sees the size first and lists it as oversized.
    return TreeEntry(path, ENTRY_FILE, size=size, read=None)


def extract_archive(archive: Path, dest: Path, limits: ArchiveLimits, *, max_file_bytes: int) -> list[TreeEntry]:
    """Extract a zip or tar(.gz/.bz2/.xz) into dest (an empty folder).

    Returns the entries not written to disk (links, oversized files) for the
    scan to list. Raises ArchiveError, naming the entry and the rule, on any
    unsafe entry or a bomb; the caller removes dest.
    """
    size = archive.stat().st_size
    with open(archive, "rb") as fh:
        head = fh.read(1024)
    fmt = detect_format(head)
    if not fmt:
        raise ArchiveError(f"{archive.name}: not a zip or tar archive (unknown format)")
    budget = Budget(limits, size)
    with SafeTree(dest, budget) as tree:
        if fmt == "zip":
            return _extract_zip(archive, tree, budget, max_file_bytes)
        # Two budgets for a tar: the decompressed stream (a bomb of members never written) and the
        # bytes really written (a sparse member writes its holes as zeros the stream never carried).
        return _extract_tar(archive, fmt, tree, Budget(limits, size), max_file_bytes)


def _extract_zip(archive: Path, tree: SafeTree, budget: Budget, max_file_bytes: int) -> list[TreeEntry]:
    extra: list[TreeEntry] = []
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            if len(infos) > budget.limits.max_entries:
                raise ArchiveError(f"archive bomb: {len(infos)} entries, over the limit of {budget.limits.max_entries}")
            declared_total = sum(i.file_size for i in infos)
            if declared_total > budget.limits.max_total_bytes:
                raise ArchiveError(
                    f"archive bomb: entries declare {declared_total} bytes, over the limit of {budget.limits.max_total_bytes}"
                )

            def entries() -> Iterator[tuple[zipfile.ZipInfo, ArchiveEntry]]:
                for info in infos:
                    target = ""
                    if zip_is_symlink(info):
                        safe_relative_path(info.filename)
                        with zf.open(info) as src:
                            raw = src.read(MAX_LINK_TARGET + 1)
                        if len(raw) > MAX_LINK_TARGET:
                            raise ArchiveError(f"symbolic link {info.filename!r}: target longer than {MAX_LINK_TARGET} bytes")
                        target = raw.decode("utf-8", errors="replace")
                    yield info, zip_entry(info, target)

            seen: set[str] = set()
            for info, entry in entries():
                budget.add_entry(entry.path)
                _claim_once(entry, seen)
                if entry.type == DIR:
                    tree.mkdir(entry.path)
                elif entry.type == SYMLINK:
                    extra.append(TreeEntry(entry.path, ENTRY_SYMLINK, link_target=entry.link_target))
                else:
                    budget.check_declared(entry)
                    if entry.size > max_file_bytes:
                        extra.append(_oversized_entry(entry.path, entry.size))
                        continue
                    with zf.open(info) as src:
                        tree.write(entry.path, _blocks(src), declared=entry.size)
    except zipfile.BadZipFile as exc:
        raise ArchiveError(f"{archive.name}: damaged zip archive ({exc})") from exc
    except (NotImplementedError, RuntimeError) as exc:
        # zipfile: unsupported compression method, or an encrypted entry.
        raise ArchiveError(f"{archive.name}: cannot extract ({exc})") from exc
    return extra


def _claim_once(entry: ArchiveEntry, seen: set[str]) -> None:
    """A second entry for the same file path would silently replace the first: refuse it."""
    if entry.type == DIR:
        return
    if entry.path in seen:
        raise ArchiveError(f"archive entry {entry.path!r} appears twice")
    seen.add(entry.path)


def _extract_tar(archive: Path, fmt: str, tree: SafeTree, stream_budget: Budget, max_file_bytes: int) -> list[TreeEntry]:
    budget = stream_budget
    extra: list[TreeEntry] = []
    links: list[ArchiveEntry] = []
    written: dict[str, int] = {}
    raw = open(archive, "rb")
    try:
        inner: io.BufferedIOBase = raw
        if fmt == "tar.gz":
            inner = gzip.GzipFile(fileobj=raw, mode="rb")
        elif fmt == "tar.bz2":
            inner = bz2.BZ2File(raw, mode="rb")
        elif fmt == "tar.xz":
            inner = lzma.LZMAFile(raw, mode="rb")
        stream = io.BufferedReader(_CountingReader(inner, budget), buffer_size=CHUNK)
        # Stream mode ("r|"): one pass, no seeking, so every decompressed byte passes the budget.
        with tarfile.open(fileobj=stream, mode="r|") as tf:

            def entries() -> Iterator[tuple[tarfile.TarInfo, ArchiveEntry]]:
                for member in tf:
                    budget.add_entry(member.name)
                    yield member, tar_entry(member)

            seen: set[str] = set()
            for member, entry in entries():
                _claim_once(entry, seen)
                if entry.type == DIR:
                    tree.mkdir(entry.path)
                elif entry.type == SYMLINK:
                    extra.append(TreeEntry(entry.path, ENTRY_SYMLINK, link_target=entry.link_target))
                elif entry.type == HARDLINK:
                    links.append(entry)
                elif entry.size > max_file_bytes:
                    extra.append(_oversized_entry(entry.path, entry.size))
                    written[entry.path] = -entry.size
                else:
                    src = tf.extractfile(member)
                    if src is None:
                        raise ArchiveError(f"archive entry {member.name!r}: no data")
                    # Charged as written (tree.budget): a sparse member's holes cost what they occupy on disk.
                    written[entry.path] = tree.write(entry.path, _blocks(src), declared=entry.size)
    except tarfile.TarError as exc:
        raise ArchiveError(f"{archive.name}: damaged tar archive ({exc})") from exc
    except (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"{archive.name}: damaged compressed stream ({exc})") from exc
    except OSError as exc:
        if exc.errno is None:  # bz2 and friends report bad data as a bare OSError
            raise ArchiveError(f"{archive.name}: damaged compressed stream ({exc})") from exc
        raise
    finally:
        raw.close()
    for link in links:
        if link.link_target not in written:
            raise ArchiveError(f"hard link {link.path!r} -> {link.link_target!r}: the target is not a file of the archive")
        size = written[link.link_target]
        if size < 0:
            extra.append(_oversized_entry(link.path, -size))
            continue
        data = tree.read(link.link_target)
        # A hard link is a second copy on disk here: it costs extracted bytes like any file.
        tree.write(link.path, [data], count=True)
    return extra


# ---------------------------------------------------------------- git


@dataclass(frozen=True)
class GitSource:
    clone_url: str  # what git is given
    project_base: str  # "github:owner/repo" or "git:host/path" (never with credentials)
    origin: str  # "github" or "git"
    display: str  # the URL without credentials, for input_ref and messages
    # A repository on the gateway's own disk (a folder or file:// URL): a server-side path, read
    # only when the caller may read it (pipeline/submit.py check_server_path).
    local_path: str = ""


_SCP_LIKE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+):(?!//)(.+)$")
_ALLOWED_SCHEMES = {"https", "http", "ssh", "git", "file"}


def _strip_git(path: str) -> str:
    path = path.strip("/")
    return path[:-4] if path.endswith(".git") else path


def parse_git_source(source: str) -> GitSource:
    """A git URL, scp-like address or local repository path -> what to clone and how to name it."""
    source = source.strip()
    if not source:
        raise FetchError("empty git URL")
    if source.startswith("-"):
        raise FetchError(f"refused git URL {source!r}: it would be read as a git option")
    if "::" in source.split("/", 1)[0] or source.startswith("ext:"):
        raise FetchError(f"refused git URL {source!r}: remote helpers (transport::address) are not allowed")
    if "://" in source:
        parts = urlsplit(source)
        scheme = parts.scheme.lower()
        if scheme not in _ALLOWED_SCHEMES:
            raise FetchError(f"refused git URL {source!r}: scheme {scheme!r} is not one of {sorted(_ALLOWED_SCHEMES)}")
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        display = f"{scheme}://{host}{port}{parts.path}"
        path = _strip_git(parts.path)
        if scheme == "file":
            if host not in ("", "localhost"):
                raise FetchError(f"refused git URL {display!r}: a file:// URL names a path on this machine only")
            name = path.rsplit("/", 1)[-1] or "repository"
            return GitSource(source, f"git:{name}", "git", display, local_path=parts.path or "/")
        if host.lower() in ("github.com", "www.github.com"):
            return GitSource(source, f"github:{path}", "github", display)
        return GitSource(source, f"git:{host}{port}/{path}", "git", display)
    m = _SCP_LIKE.match(source)
    if m and not Path(source).exists():
        host, path = m.group(1), _strip_git(m.group(2))
        display = f"{host}:{m.group(2)}"
        if host.lower() == "github.com":
            return GitSource(source, f"github:{path}", "github", display)
        return GitSource(source, f"git:{host}/{path}", "git", display)
    local = Path(source).expanduser()
    if local.is_dir():
        resolved = local.resolve()
        # file:// makes git honour --depth for a local repository (a plain path ignores it).
        return GitSource(
            resolved.as_uri(), f"git:{_strip_git(resolved.name) or 'repository'}", "git", str(resolved), local_path=str(resolved)
        )
    raise FetchError(f"{source!r} is neither a git URL nor a local repository folder")


# Passed through from the gateway's environment: how to reach the network and trust its certificates.
# Nothing else: no SSH agent, no credential helpers, no askpass program, no user or system git config.
_GIT_ENV_PASSED = (
    "PATH",
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "no_proxy",
    "NO_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "GIT_PROXY_COMMAND",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
    "TMPDIR",
)
_SSH_ANONYMOUS = (
    "ssh -F /dev/null -o BatchMode=yes -o ConnectTimeout=20 -o IdentityAgent=none -o IdentitiesOnly=yes "
    "-o IdentityFile=none -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no "
    "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=accept-new -o ForwardAgent=no"
)


def git_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment for git: anonymous, non-interactive, configured by the command line alone.

    Cloning on a caller's behalf must not use the gateway user's keys, tokens or
    config: a private repository fails as it would for a stranger.
    """
    source = os.environ if environ is None else environ
    env = {k: source[k] for k in _GIT_ENV_PASSED if k in source}
    env.setdefault("PATH", os.defpath)
    env.update(
        {
            "HOME": "/nonexistent",  # no ~/.gitconfig, ~/.git-credentials, ~/.netrc
            "XDG_CONFIG_HOME": "/nonexistent",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_SYSTEM": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",  # a private or missing repository fails instead of waiting for a password
            "GIT_ASKPASS": "/bin/false",
            "SSH_ASKPASS": "/bin/false",
            "GIT_LFS_SKIP_SMUDGE": "1",
            "GIT_SSH_COMMAND": _SSH_ANONYMOUS,
            "GIT_PROTOCOL_FROM_USER": "0",
            "GCM_INTERACTIVE": "never",
            "LC_ALL": "C",
        }
    )
    return env


def _git_env() -> dict[str, str]:
    return git_env()


# -c options for every git call: no hooks, no fsmonitor, checked objects, no ext:: transport.
_GIT_SAFE = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "transfer.fsckObjects=true",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "credential.helper=",
    "-c",
    "core.askPass=/bin/false",
    "-c",
    "core.sshCommand=" + _SSH_ANONYMOUS,
    "-c",
    "submodule.recurse=false",
    "-c",
    "http.lowSpeedLimit=1000",
    "-c",
    "http.lowSpeedTime=30",
]


def _protocols(allow_file: bool) -> list[str]:
    """Only the network transports (and file:// for a permitted local repository): never ext::, fd:: and the like."""
    allowed = ["https", "http", "ssh", "git", *(["file"] if allow_file else [])]
    out = ["-c", "protocol.allow=never"]
    for name in allowed:
        out += ["-c", f"protocol.{name}.allow=always"]
    return out


def _folder_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                continue  # git renames its temporary packs while we look
    return total


SIZE_POLL_S = 0.25


def _run_git(
    args: list[str],
    *,
    deadline: float,
    what: str,
    display: str,
    cwd: Path | None = None,
    allow_file: bool = False,
    watch: Path | None = None,
    max_bytes: int = 0,
) -> bytes:
    """Run git under the deadline; with ``watch``, kill it once that folder holds more than ``max_bytes``."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise FetchError(f"git {what} of {display}: timed out")
    try:
        # Its own process group: on timeout the ssh or proxy helpers git started die with it,
        # instead of holding the pipes open past the deadline.
        proc = subprocess.Popen(
            ["git", *_GIT_SAFE, *_protocols(allow_file), *args],
            cwd=cwd,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise FetchError("the git program is not installed (needed for git inputs)") from exc
    while True:
        left = deadline - time.monotonic()
        try:
            stdout, stderr = proc.communicate(timeout=max(0.01, min(left, SIZE_POLL_S) if watch else left))
            break
        except subprocess.TimeoutExpired as exc:
            over = watch is not None and _folder_bytes(watch) > max_bytes
            if over or time.monotonic() >= deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                if over:
                    raise FetchError(
                        f"git {what} of {display}: the repository passes the size limit of {max_bytes} "
                        "bytes (GODOT_RAG_GIT_MAX_BYTES)"
                    ) from exc
                raise FetchError(f"git {what} of {display}: no answer within the time limit ({remaining:.0f} s)") from exc
    if watch is not None and _folder_bytes(watch) > max_bytes:
        # Finished between two looks: the cap holds all the same.
        raise FetchError(
            f"git {what} of {display}: the repository passes the size limit of {max_bytes} bytes (GODOT_RAG_GIT_MAX_BYTES)"
        )
    if proc.returncode != 0:
        lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        # git's first fatal line names the cause; the lines after it are generic advice.
        fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
        detail = "; ".join((fatal or lines[-3:])[:3]) or f"exit status {proc.returncode}"
        # git quotes the URL it was given, credentials included: never into a stored error.
        raise FetchError(redact_credentials(f"git {what} of {display} failed: {detail}"))
    return stdout


def _read_blobs(repo: Path, shas: list[str], *, deadline: float, display: str) -> Iterator[tuple[str, bytes]]:
    """(sha, content) for each sha in order, from one `git cat-file --batch`."""
    if not shas:
        return
    proc = subprocess.Popen(
        ["git", *_GIT_SAFE, "cat-file", "--batch"],
        cwd=repo,
        env=_git_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def feed() -> None:
        try:
            for sha in shas:
                proc.stdin.write(sha.encode() + b"\n")  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass

    # Writing every request before reading would deadlock on full pipes.
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    timer = threading.Timer(max(deadline - time.monotonic(), 0.1), proc.kill)
    timer.start()
    try:
        for sha in shas:
            header = proc.stdout.readline()
            fields = header.split()
            if len(fields) != 3 or fields[1] != b"blob":
                raise FetchError(f"git cat-file of {display}: object {sha} is not readable ({header!r}); timed out or damaged")
            size = int(fields[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)  # the newline after each object
            if len(data) != size:
                raise FetchError(f"git cat-file of {display}: object {sha} was cut short (timed out?)")
            yield sha, data
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
        writer.join(timeout=1)


@dataclass(frozen=True)
class GitTree:
    commit: str
    extra: list[TreeEntry]  # entries not written: links, submodules, oversized files


def clone_git(
    source: GitSource,
    ref: str,
    dest: Path,
    limits: ArchiveLimits,
    *,
    max_file_bytes: int,
    timeout_s: float,
    max_repo_bytes: int = 256 * 1024 * 1024,
) -> GitTree:
    """Shallow-clone without checkout into dest/.repo, then write the tree's files into dest/tree.

    file:// (and a local folder) is only spoken when ``source.local_path`` is
    set, which the caller has checked against the paths it may read.
    """
    deadline = time.monotonic() + timeout_s
    repo = dest / ".repo"
    clone = [
        "clone",
        "--quiet",
        "--no-checkout",
        "--depth",
        "1",
        "--no-tags",
        "--single-branch",
        "--no-recurse-submodules",
        "--template=",
    ]
    if ref:
        if ref.startswith("-"):
            raise FetchError(f"refused git ref {ref!r}")
        clone += ["--branch", ref]
    _run_git(
        [*clone, "--", source.clone_url, str(repo)],
        deadline=deadline,
        what="clone",
        display=source.display,
        allow_file=bool(source.local_path),
        watch=dest,
        max_bytes=max_repo_bytes,
    )
    try:
        commit = (
            _run_git(
                ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
                deadline=deadline,
                what="rev-parse",
                display=source.display,
                cwd=repo,
            )
            .decode()
            .strip()
        )
    except FetchError as exc:
        raise FetchError(f"git repository {source.display} has no commit to analyse (empty repository?)") from exc
    listing = _run_git(
        ["ls-tree", "-r", "-z", "--full-tree", "--long", commit],
        deadline=deadline,
        what="ls-tree",
        display=source.display,
        cwd=repo,
    )
    out = dest / "tree"
    out.mkdir()
    budget = Budget(limits, None)
    extra: list[TreeEntry] = []
    to_write: list[tuple[str, str]] = []
    links: list[tuple[str, str]] = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, otype, sha, size_field = meta.decode().split()
        path = safe_relative_path(raw_path.decode("utf-8", "surrogateescape"))
        budget.add_entry(path)
        if otype == "commit":
            extra.append(TreeEntry(path + "/", ENTRY_EXCLUDED, reason="git submodule: not fetched (no submodule recursion)"))
        elif mode == "120000":
            links.append((path, sha))
        elif int(size_field) > max_file_bytes:
            extra.append(_oversized_entry(path, int(size_field)))
        else:
            to_write.append((path, sha))
    blobs = {sha: data for sha, data in _read_blobs(repo, sorted({s for _, s in links}), deadline=deadline, display=source.display)}
    for path, sha in links:
        extra.append(TreeEntry(path, ENTRY_SYMLINK, link_target=blobs[sha][:MAX_LINK_TARGET].decode("utf-8", "replace")))
    with SafeTree(out, budget) as tree:
        by_sha: dict[str, list[str]] = {}
        for path, sha in to_write:
            by_sha.setdefault(sha, []).append(path)
        for sha, data in _read_blobs(repo, list(by_sha), deadline=deadline, display=source.display):
            for path in by_sha[sha]:
                tree.write(path, [data])
    return GitTree(commit, extra)


# ---------------------------------------------------------------- packing a folder (the CLI's side)


def pack_folder(root: Path, limits: WalkLimits, *, max_file_bytes: int) -> bytes:
    """A folder as tar.gz bytes in memory, for a gateway that reads content, never the caller's paths.

    The same walk as the gateway's own (no link followed, VCS and editor
    caches not descended), so the gateway lists the same files:
    - files the policy decides by path alone (assets, docs, C#) travel empty:
      it never reads their bytes; their size shows as 0;
    - links travel as links when they stay inside the folder; others are
      left out (the gateway would refuse the archive as a whole for them);
    - skipped folders (.git/, .godot/) travel as empty folders, listed with their reason;
    - files larger than ``max_file_bytes`` of an analysed type travel whole, so
      the gateway lists them as oversized with their real size.
    """
    root = root.resolve()
    entries = walk_folder(root, limits)
    buf = io.BytesIO()
    # mtime 0 and sorted names: the same folder packs to the same bytes.
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tf:
        for e in sorted(entries, key=lambda x: x.path):
            name = e.path.rstrip("/")
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if e.kind == ENTRY_EXCLUDED:
                if e.path.endswith("/"):
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tf.addfile(info)
                continue
            if e.kind == ENTRY_SYMLINK:
                try:
                    resolve_link(name, e.link_target)
                except ArchiveError:
                    continue
                info.type, info.linkname = tarfile.SYMTYPE, e.link_target
                tf.addfile(info)
                continue
            if e.kind != ENTRY_FILE or e.read is None:
                continue
            try:
                data = e.read() if readable_by_policy(name) else b""
            except OSError:
                continue  # vanished or unreadable since the walk: the gateway cannot list what it never got
            info.size, info.mode = len(data), 0o644
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()
