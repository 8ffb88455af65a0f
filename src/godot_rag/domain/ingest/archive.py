"""Safe-extraction rules for uploaded archives and fetched git trees.

Pure: these functions look at entry names, types, link targets and byte
counts and either return a normalised entry or raise ``ArchiveError``. The
writing itself is in ``godot_rag.infra.fetch``, which asks these rules
before every entry and every block of bytes.

The stance: an archive that tries to leave its folder (absolute paths, ``..``,
links pointing outside), carries device files or pipes, or inflates far
beyond its own size is refused as a whole, with the entry and the rule named.
Half-analysing a hostile archive would hide the attack behind a verdict.
"""

from __future__ import annotations

import posixpath
import stat
import tarfile
import zipfile
from dataclasses import dataclass

from godot_rag.domain.ingest.policy import IngestError

# Entry types after normalisation.
FILE = "file"
DIR = "dir"
SYMLINK = "symlink"
HARDLINK = "hardlink"

# Below this many extracted bytes the ratio rule does not apply: a 2 KiB zip
# of a 300 KiB repetitive .tscn is ordinary, a bomb needs volume to hurt.
RATIO_FLOOR_BYTES = 1 << 20


class ArchiveError(IngestError):
    """The archive (or fetched tree) is refused; the message names the entry and the rule."""


@dataclass(frozen=True)
class ArchiveLimits:
    max_total_bytes: int  # all extracted bytes together
    max_ratio: float  # extracted bytes / archive bytes, above RATIO_FLOOR_BYTES
    max_entries: int


@dataclass(frozen=True)
class ArchiveEntry:
    path: str  # normalised relative POSIX path, no trailing slash
    type: str  # FILE, DIR, SYMLINK, HARDLINK
    size: int = 0  # declared uncompressed size (FILE)
    link_target: str = ""  # SYMLINK: as stored; HARDLINK: normalised archive path of the target
    compressed_size: int = 0  # zip only; 0 when unknown


def safe_relative_path(name: str) -> str:
    """The normalised relative path of an archive member, or ArchiveError.

    Backslashes count as separators: a zip written on Windows may use them,
    and ``..\\..\\x`` must not slip through as one odd file name.
    """
    if "\0" in name:
        raise ArchiveError(f"archive entry {name!r}: NUL byte in the name")
    raw = name.replace("\\", "/")
    if raw.startswith("/"):
        raise ArchiveError(f"archive entry {name!r}: absolute path")
    if len(raw) >= 2 and raw[1] == ":" and raw[0].isalpha():
        raise ArchiveError(f"archive entry {name!r}: absolute path (drive letter)")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ArchiveError(f"archive entry {name!r}: '..' leads outside the extraction folder")
    if not parts:
        raise ArchiveError(f"archive entry {name!r}: empty path")
    return "/".join(parts)


def resolve_link(entry_path: str, target: str) -> str:
    """Where a symbolic link inside the tree points, as a tree-relative path; ArchiveError when it leaves the tree."""
    if not target:
        raise ArchiveError(f"symbolic link {entry_path!r}: empty target")
    if "\0" in target:
        raise ArchiveError(f"symbolic link {entry_path!r}: NUL byte in the target")
    if target.startswith("/"):
        raise ArchiveError(f"symbolic link {entry_path!r} -> {target!r}: absolute target leads outside the extraction folder")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(entry_path), target))
    if joined == ".." or joined.startswith("../"):
        raise ArchiveError(f"symbolic link {entry_path!r} -> {target!r} leads outside the extraction folder")
    return "" if joined == "." else joined


class Budget:
    """Counts entries and extracted bytes against the limits; raises on the first excess.

    Bytes are counted as they are really produced by decompression, not as
    headers declare them: a zip's declared sizes can lie.
    """

    def __init__(self, limits: ArchiveLimits, archive_bytes: int | None):
        """``archive_bytes`` None: no ratio (a git tree has no archive size to compare with)."""
        self.limits = limits
        self.archive_bytes = None if archive_bytes is None else max(archive_bytes, 1)
        self.entries = 0
        self.total = 0

    def add_entry(self, path: str) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise ArchiveError(f"archive bomb: more than {self.limits.max_entries} entries (at {path!r})")

    def add_bytes(self, n: int, path: str) -> None:
        self.total += n
        if self.total > self.limits.max_total_bytes:
            raise ArchiveError(
                f"archive bomb: extracted size passes the limit of {self.limits.max_total_bytes} bytes (at {path!r})"
            )
        if (
            self.archive_bytes is not None
            and self.total > RATIO_FLOOR_BYTES
            and self.total > self.limits.max_ratio * self.archive_bytes
        ):
            raise ArchiveError(
                f"archive bomb: {self.total} bytes extracted from {self.archive_bytes} bytes of archive "
                f"(ratio over {self.limits.max_ratio:g}, at {path!r})"
            )

    def check_declared(self, entry: ArchiveEntry) -> None:
        """Refuse early on what the header itself admits (the real count still runs while writing)."""
        if entry.size > self.limits.max_total_bytes:
            raise ArchiveError(
                f"archive bomb: entry {entry.path!r} declares {entry.size} bytes, over the limit of {self.limits.max_total_bytes}"
            )
        if entry.compressed_size and entry.size > RATIO_FLOOR_BYTES and entry.size > self.limits.max_ratio * entry.compressed_size:
            raise ArchiveError(
                f"archive bomb: entry {entry.path!r} inflates {entry.compressed_size} bytes to {entry.size} "
                f"(ratio over {self.limits.max_ratio:g})"
            )


def _special_kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    return ""


def zip_entry(info: zipfile.ZipInfo, link_target: str = "") -> ArchiveEntry:
    """Normalise one zip member. ``link_target`` is the member's content when it is a symlink."""
    path = safe_relative_path(info.filename)
    unix_mode = info.external_attr >> 16
    if info.is_dir():
        return ArchiveEntry(path, DIR)
    special = _special_kind(unix_mode) if info.create_system == 3 else ""
    if special:
        raise ArchiveError(f"archive entry {info.filename!r}: {special} refused")
    if info.create_system == 3 and stat.S_ISLNK(unix_mode):
        resolve_link(path, link_target)
        return ArchiveEntry(path, SYMLINK, link_target=link_target)
    return ArchiveEntry(path, FILE, size=info.file_size, compressed_size=info.compress_size)


def zip_is_symlink(info: zipfile.ZipInfo) -> bool:
    return info.create_system == 3 and stat.S_ISLNK(info.external_attr >> 16)


def tar_entry(member: tarfile.TarInfo) -> ArchiveEntry:
    """Normalise one tar member; devices, pipes and links out of the tree are refused."""
    path = safe_relative_path(member.name)
    if member.ischr() or member.isblk():
        raise ArchiveError(f"archive entry {member.name!r}: device file refused")
    if member.isfifo():
        raise ArchiveError(f"archive entry {member.name!r}: named pipe refused")
    if member.isdir():
        return ArchiveEntry(path, DIR)
    if member.issym():
        resolve_link(path, member.linkname)
        return ArchiveEntry(path, SYMLINK, link_target=member.linkname)
    if member.islnk():
        # Hard link targets are archive paths, relative to the archive root.
        target = safe_relative_path(member.linkname)
        return ArchiveEntry(path, HARDLINK, link_target=target)
    if member.isfile():
        return ArchiveEntry(path, FILE, size=member.size)
    raise ArchiveError(f"archive entry {member.name!r}: unsupported member type {member.type!r}")


def detect_format(head: bytes) -> str:
    """'zip', 'tar', 'tar.gz', 'tar.bz2', 'tar.xz' from the first 512+ bytes, or '' when none fits."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith(b"\x1f\x8b"):
        return "tar.gz"
    if head.startswith(b"BZh"):
        return "tar.bz2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "tar.xz"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return ""


ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


def archive_stem(name: str) -> str:
    """'dodge.tar.gz' -> 'dodge' (used for the project id)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    lower = base.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if lower.endswith(suffix):
            return base[: -len(suffix)] or base
    return base


def looks_like_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)
