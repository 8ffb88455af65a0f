"""Writing into a user's project folder: git state, path containment, atomic file replacement."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

GIT_TIMEOUT_S = 30


def git_status(root: Path) -> list[str] | None:
    """``git status --porcelain`` lines for ``root``; None when root is not inside a git work tree."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        inside = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            check=False,
        )
    except FileNotFoundError:
        return None  # no git on this machine: the folder cannot be a checked work tree for us
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return None
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=normal", "--", "."],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        env=env,
        check=True,
    )
    return [line for line in status.stdout.splitlines() if line.strip()]


def contained_path(root: Path, rel: str) -> Path | None:
    """``root/rel`` when it is a regular file (not a link) whose resolved path is inside the resolved root."""
    base = root.resolve()
    candidate = base / rel
    try:
        if stat.S_ISLNK(os.lstat(candidate).st_mode):
            return None
    except FileNotFoundError:
        return None
    resolved = candidate.resolve()
    if not resolved.is_relative_to(base) or resolved != candidate:
        return None  # a linked parent folder leads elsewhere
    return resolved


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a temporary file in the same folder, fsync, rename (mode kept)."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".patch-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
