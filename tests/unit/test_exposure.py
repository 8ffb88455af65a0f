"""Who can read what: server-side paths, local repositories, git's environment, the CLI's content, secrets at rest."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from godot_rag.cli import submit_request
from godot_rag.domain.redact import redact_credentials
from godot_rag.errors import AccessDeniedError
from godot_rag.infra.fetch import FetchError, git_env
from godot_rag.pipeline.submit import check_server_path, collect
from godot_rag.settings import SettingsError, is_loopback_host, load_settings
from godot_rag.supervisor import write_runtime_file

COLLECTION = Path(__file__).resolve().parent.parent / "corpus" / "ingest" / "collection"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="the git program is not installed")


def settings_for(tmp_path: Path, **env: str):
    return load_settings(
        {
            "GODOT_RAG_DATA_DIR": str(tmp_path / "data"),
            "GODOT_RAG_GIT_TIMEOUT_S": "30",
            **{f"GODOT_RAG_{k.upper()}": v for k, v in env.items()},
        }
    )


def test_loopback_names():
    assert all(is_loopback_host(h) for h in ("127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback_host(h) for h in ("0.0.0.0", "::", "10.0.0.5", "gateway.example", ""))


def test_a_service_beyond_loopback_needs_a_token(tmp_path: Path):
    with pytest.raises(SettingsError, match="AUTH_TOKEN"):
        settings_for(tmp_path, host="0.0.0.0").check_listen_security()
    settings_for(tmp_path, host="0.0.0.0", auth_token="t" * 32).check_listen_security()
    settings_for(tmp_path).check_listen_security()  # loopback: no token needed


# ---------------------------------------------------------------- server-side paths


def test_a_remote_caller_cannot_name_a_path_of_the_gateway(tmp_path: Path):
    settings = settings_for(tmp_path)
    with pytest.raises(AccessDeniedError, match="send the content"):
        collect(path=str(COLLECTION), settings=settings, local_caller=False)
    with pytest.raises(AccessDeniedError):
        collect(path="/etc/passwd", settings=settings, local_caller=False)
    # The local user of a loopback-only gateway reads their own files, as before.
    assert collect(path=str(COLLECTION), settings=settings, local_caller=True).projects


def test_beyond_loopback_no_path_is_read_without_roots(tmp_path: Path):
    settings = settings_for(tmp_path, host="0.0.0.0", auth_token="x" * 32)
    with pytest.raises(AccessDeniedError):
        collect(path=str(COLLECTION), settings=settings, local_caller=True)


def test_allowed_roots_bound_every_caller_and_links_cannot_leave_them(tmp_path: Path):
    root = tmp_path / "projects"
    shutil.copytree(COLLECTION, root / "demos")
    (root / "escape").symlink_to(tmp_path / "data", target_is_directory=True)
    settings = settings_for(tmp_path, allowed_roots=os.pathsep.join([str(root), str(tmp_path / "elsewhere")]))
    assert collect(path=str(root / "demos"), settings=settings, local_caller=False).projects
    for outside in (str(COLLECTION), str(root / "escape"), str(root / "demos" / ".." / ".."), "/etc/passwd"):
        with pytest.raises(AccessDeniedError, match="ALLOWED_ROOTS"):
            check_server_path(outside, settings, local_caller=True)


# ---------------------------------------------------------------- git


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    cfg = home / ".gitconfig"
    cfg.write_text("[user]\n\tname = T\n\temail = t@example.invalid\n[init]\n\tdefaultBranch = main\n")
    for key, value in {"HOME": str(home), "GIT_CONFIG_GLOBAL": str(cfg), "GIT_CONFIG_NOSYSTEM": "1"}.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "demos"
    shutil.copytree(COLLECTION, path)
    for args in (["init", "--quiet"], ["add", "-A"], ["commit", "--quiet", "-m", "fixture"]):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


@needs_git
def test_a_remote_caller_cannot_clone_a_local_repository(tmp_path: Path, repo: Path):
    settings = settings_for(tmp_path)
    for url in (repo.as_uri(), str(repo), f"file://localhost{repo}"):
        with pytest.raises(AccessDeniedError):
            collect(git_url=url, settings=settings, local_caller=False)
    with pytest.raises(FetchError, match="this machine only"):
        collect(git_url=f"file://otherhost{repo}", settings=settings, local_caller=True)


@needs_git
def test_git_ignores_the_gateway_users_config_and_agent(tmp_path: Path, repo: Path, monkeypatch):
    # The gateway user's config rewrites a remote URL to a local repository: honoured, a remote
    # caller's "https://" URL would read a local path (and a credential helper would hand out tokens).
    cfg = Path(os.environ["GIT_CONFIG_GLOBAL"])
    cfg.write_text(
        cfg.read_text() + f'[url "{repo.as_uri()}"]\n\tinsteadOf = https://example.invalid/demo.git\n'
        "[credential]\n\thelper = store\n"
    )
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    settings = settings_for(tmp_path)
    with pytest.raises(FetchError):
        collect(git_url="https://example.invalid/demo.git", settings=settings, local_caller=False)
    env = git_env()
    assert "SSH_AUTH_SOCK" not in env and env["GIT_CONFIG_GLOBAL"] == "/dev/null" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_TERMINAL_PROMPT"] == "0" and "IdentityAgent=none" in env["GIT_SSH_COMMAND"]
    assert env["HOME"] != os.environ["HOME"]


@needs_git
def test_a_clone_over_the_size_cap_is_stopped(tmp_path: Path, repo: Path):
    (repo / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # random: does not compress
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "big"], cwd=repo, check=True, capture_output=True)
    settings = settings_for(tmp_path, git_max_bytes=str(1024 * 1024))
    with pytest.raises(FetchError, match="size limit"):
        collect(git_url=repo.as_uri(), settings=settings, local_caller=True)
    assert collect(git_url=repo.as_uri(), settings=settings_for(tmp_path), local_caller=True).projects


def test_git_errors_never_carry_url_credentials():
    assert (
        redact_credentials("fatal: unable to access 'https://bob:s3cret@example.invalid/x.git/'")
        == "fatal: unable to access 'https://***@example.invalid/x.git/'"
    )
    assert "pw" not in redact_credentials("connect postgresql://godot:pw@127.0.0.1:5432/godot failed")
    assert redact_credentials("host=h password=pw dbname=d") == "host=h password=*** dbname=d"
    assert redact_credentials("no secret: https://example.invalid/a@b") == "no secret: https://example.invalid/a@b"


def test_stored_and_logged_errors_are_redacted():
    import logging

    from godot_rag.infra.logs import make_handler

    stream = io.StringIO()
    handler = make_handler("test", "text", stream)
    logger = logging.getLogger("godot_rag.test_redact")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("clone of %s failed", "https://bob:s3cret@example.invalid/x.git")
    finally:
        logger.removeHandler(handler)
    assert "s3cret" not in stream.getvalue() and "***@example.invalid" in stream.getvalue()


# ---------------------------------------------------------------- the CLI sends content


def test_the_cli_sends_a_folder_as_an_archive_that_lists_the_same_files(tmp_path: Path):
    settings = settings_for(tmp_path)
    request = submit_request(str(COLLECTION), "p", settings=settings)
    assert request.WhichOneof("input") == "archive" and request.project_id == "local:collection"
    assert str(COLLECTION) not in request.SerializeToString().decode("latin-1")
    remote = collect(
        archive=request.archive,
        archive_name=request.archive_name,
        project_id=request.project_id,
        settings=settings,
        local_caller=False,
    )
    local = collect(path=str(COLLECTION), settings=settings, local_caller=True)

    def listing(sub):
        return [
            (
                p.project_id,
                [(f.source_file, f.source_kind, f.included, f.sha256, f.excluded_reason.split(" (")[0]) for f in p.files],
            )
            for p in sub.projects
        ]

    assert listing(remote) == listing(local)


def test_the_cli_sends_expanded_text_and_archives_as_content(tmp_path: Path):
    settings = settings_for(tmp_path)
    text_file = tmp_path / "dodge.txt"
    text_file.write_text("# project.godot\nconfig_version=4\n")
    request = submit_request(str(text_file), "p", settings=settings)
    assert request.WhichOneof("input") == "expanded_text" and request.expanded_text.startswith("# project.godot")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("game/player.gd")
        info.size = 13
        tf.addfile(info, io.BytesIO(b"extends Node\n"))
    archive = tmp_path / "game.tar.gz"
    archive.write_bytes(buf.getvalue())
    request = submit_request(str(archive), "p", settings=settings)
    assert request.WhichOneof("input") == "archive" and request.archive == buf.getvalue()


def test_the_cli_leaves_out_links_that_leave_the_folder(tmp_path: Path):
    folder = tmp_path / "game"
    shutil.copytree(COLLECTION / "3d" / "shooter_g4", folder)
    (folder / "secret.gd").symlink_to("/etc/passwd")
    (folder / "alias.gd").symlink_to("project.godot")
    request = submit_request(str(folder), "p", settings=settings_for(tmp_path))
    with tarfile.open(fileobj=io.BytesIO(request.archive)) as tf:
        names = {m.name: m for m in tf.getmembers()}
    assert "secret.gd" not in names and names["alias.gd"].issym()


# ---------------------------------------------------------------- secrets at rest


def test_runtime_json_is_readable_by_its_owner_only(tmp_path: Path):
    path = tmp_path / "runtime.json"
    stale = path.with_suffix(".tmp")
    stale.write_text("old")
    stale.chmod(0o644)
    old = os.umask(0)
    try:
        write_runtime_file(path, {"pg_dsn": "postgresql://u:pw@127.0.0.1/db"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["pg_dsn"].endswith("/db")
