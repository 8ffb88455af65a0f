"""Git inputs, on local repositories the tests create with the real git binary (never the network)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from godot_rag.cli import looks_like_git_url, submit_request
from godot_rag.infra.fetch import FetchError, parse_git_source
from godot_rag.pipeline.submit import collect
from godot_rag.settings import load_settings

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the git program is not installed")

COLLECTION = Path(__file__).resolve().parent.parent / "corpus" / "ingest" / "collection"


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch) -> dict[str, str]:
    """An isolated git configuration: no system or user config of this machine leaks into the tests."""
    home = tmp_path / "home"
    home.mkdir()
    global_config = home / ".gitconfig"
    global_config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n[init]\n\tdefaultBranch = main\n")
    for key, value in {"HOME": str(home), "GIT_CONFIG_GLOBAL": str(global_config), "GIT_CONFIG_NOSYSTEM": "1"}.items():
        monkeypatch.setenv(key, value)
    return dict(os.environ)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(path: Path, *, from_folder: Path | None = None) -> Path:
    if from_folder is not None:
        shutil.copytree(from_folder, path)
    else:
        path.mkdir(parents=True)
    git(path, "init", "--quiet")
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "--allow-empty", "-m", "fixture")
    return path


@pytest.fixture
def settings(tmp_path: Path):
    return load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path / "data"), "GODOT_RAG_GIT_TIMEOUT_S": "30"})


def test_a_file_url_repository_with_nested_projects(tmp_path: Path, git_env, settings):
    repo = make_repo(tmp_path / "demos.git", from_folder=COLLECTION)
    commit = git(repo, "rev-parse", "HEAD")
    (repo / "untracked.gd").write_text("extends Node\n")  # not committed: not analysed
    submission = collect(git_url=repo.as_uri(), settings=settings, local_caller=True)
    assert submission.source_origin == "git"
    assert submission.input_ref == f"file://{repo}@{commit}"
    assert [p.project_id for p in submission.projects] == [
        "git:demos",
        "git:demos/2d/platformer_g3",
        "git:demos/2d/platformer_g3/tests/fixture_project",
        "git:demos/3d/shooter_g4",
    ]
    top = {f.source_file: f for f in submission.projects[0].files}
    assert "untracked.gd" not in top and ".git/" not in top
    g3 = {f.source_file: f for f in submission.projects[1].files}
    assert g3["player.gd"].data == (COLLECTION / "2d" / "platformer_g3" / "player.gd").read_bytes()
    assert g3["tests/.gdignore"].included
    assert list((tmp_path / "data" / "work").iterdir()) == [], "the clone is removed once read"


def test_a_local_repository_path_is_cloned_at_its_last_commit(tmp_path: Path, git_env, settings):
    repo = make_repo(tmp_path / "g4", from_folder=COLLECTION / "3d" / "shooter_g4")
    (repo / "player.gd").write_text("extends Node2D  # uncommitted edit\n")
    (project,) = collect(git_url=str(repo), settings=settings, local_caller=True).projects
    files = {f.source_file: f for f in project.files}
    assert files["player.gd"].data == (COLLECTION / "3d" / "shooter_g4" / "player.gd").read_bytes()
    assert project.project_id == "git:g4"


def test_blobs_are_read_as_committed_without_filters(tmp_path: Path, git_env, settings):
    """A checkout would turn LF into CRLF here; the analysis sees the committed bytes."""
    repo = make_repo(tmp_path / "eol", from_folder=COLLECTION / "3d" / "shooter_g4")
    (repo / ".gitattributes").write_text("*.gd text eol=crlf\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "--quiet", "-m", "eol")
    (project,) = collect(git_url=repo.as_uri(), settings=settings, local_caller=True).projects
    data = {f.source_file: f.data for f in project.files}["player.gd"]
    assert b"\r\n" not in data and data == (COLLECTION / "3d" / "shooter_g4" / "player.gd").read_bytes()


def test_links_out_of_the_tree_and_submodules_are_listed_not_followed(tmp_path: Path, git_env, settings):
    repo = make_repo(tmp_path / "links", from_folder=COLLECTION / "3d" / "shooter_g4")
    os.symlink("../../../../etc/passwd", repo / "passwd.gd")
    os.symlink("player.gd", repo / "alias.gd")
    other = make_repo(tmp_path / "other", from_folder=COLLECTION / "2d" / "platformer_g3")
    git(repo, "add", "-A")
    # A gitlink entry, as `git submodule add` records it (added after `add -A`, which would drop it).
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{git(other, 'rev-parse', 'HEAD')},addons/lib")
    git(repo, "commit", "--quiet", "-m", "links")
    (project,) = collect(git_url=repo.as_uri(), settings=settings, local_caller=True).projects
    files = {f.source_file: f for f in project.files}
    assert "outside the project root" in files["passwd.gd"].excluded_reason and not files["passwd.gd"].data
    assert "not followed" in files["alias.gd"].excluded_reason
    assert files["addons/lib/"].excluded_reason == "git submodule: not fetched (no submodule recursion)"
    assert files["player.gd"].included


def test_no_hook_runs_even_when_the_user_configuration_names_some(tmp_path: Path, git_env, settings):
    repo = make_repo(tmp_path / "hooked", from_folder=COLLECTION / "3d" / "shooter_g4")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "hook-ran"
    for name in ("reference-transaction", "post-checkout", "post-merge"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    with open(os.environ["GIT_CONFIG_GLOBAL"], "a") as fh:
        fh.write(f"[core]\n\thooksPath = {hooks}\n")
    # Control: a plain clone under this configuration does run them, so the check below can fail.
    subprocess.run(["git", "clone", "--quiet", repo.as_uri(), str(tmp_path / "plain")], check=True, capture_output=True)
    assert marker.exists()
    marker.unlink()
    collect(git_url=repo.as_uri(), settings=settings, local_caller=True)
    assert not marker.exists()


def test_an_unreachable_repository_fails_fast_with_a_clear_message(tmp_path: Path, git_env, settings):
    started = time.monotonic()
    with pytest.raises(
        FetchError, match=r"git clone of file://.*/nowhere\.git failed: .*(does not appear to be a git repository|not found)"
    ):
        collect(git_url=(tmp_path / "nowhere.git").as_uri(), settings=settings, local_caller=True)
    assert time.monotonic() - started < 10
    assert list((tmp_path / "data" / "work").iterdir()) == []


def test_a_remote_that_never_answers_is_cut_off_at_the_time_limit(tmp_path: Path, git_env, monkeypatch):
    # git runs GIT_PROXY_COMMAND for git:// URLs; this one never answers, like a black-holed host.
    proxy = tmp_path / "proxy.sh"
    proxy.write_text("#!/bin/sh\nexec sleep 60\n")
    proxy.chmod(0o755)
    monkeypatch.setenv("GIT_PROXY_COMMAND", str(proxy))
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path / "data"), "GODOT_RAG_GIT_TIMEOUT_S": "2"})
    started = time.monotonic()
    with pytest.raises(FetchError, match="no answer within the time limit"):
        collect(git_url="git://example.invalid/demo.git", settings=settings, local_caller=True)
    assert time.monotonic() - started < 10
    assert list((tmp_path / "data" / "work").iterdir()) == []


def test_unknown_ref_and_empty_repository(tmp_path: Path, git_env, settings):
    repo = make_repo(tmp_path / "r", from_folder=COLLECTION / "3d" / "shooter_g4")
    with pytest.raises(FetchError, match="nope"):
        collect(git_url=repo.as_uri(), git_ref="nope", settings=settings, local_caller=True)
    git(repo, "tag", "v1")
    (project,) = collect(git_url=repo.as_uri(), git_ref="v1", settings=settings, local_caller=True).projects
    assert project.project_id == "git:r@v1"
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "--quiet")
    with pytest.raises(FetchError, match="no commit|empty"):
        collect(git_url=empty.as_uri(), settings=settings, local_caller=True)


@pytest.mark.parametrize(
    "url,error",
    [
        ("--upload-pack=touch /tmp/godot_rag_pwned", "git option"),
        ("ext::sh -c touch% /tmp/godot_rag_pwned", "remote helpers"),
        ("ftp://example.invalid/repo.git", "scheme 'ftp'"),
        ("/no/such/folder", "neither a git URL nor a local repository"),
    ],
)
def test_refused_sources_never_reach_git(url, error, settings):
    with pytest.raises(FetchError, match=error):
        collect(git_url=url, settings=settings, local_caller=True)
    assert not Path("/tmp/godot_rag_pwned").exists()


@pytest.mark.parametrize(
    "url,base,origin,display",
    [
        (
            "https://github.com/godotengine/godot-demo-projects.git",
            "github:godotengine/godot-demo-projects",
            "github",
            "https://github.com/godotengine/godot-demo-projects.git",
        ),
        (
            "git@github.com:godotengine/godot-demo-projects.git",
            "github:godotengine/godot-demo-projects",
            "github",
            "github.com:godotengine/godot-demo-projects.git",
        ),
        (
            "https://user:s3cret@gitlab.example.com:8443/team/game.git",
            "git:gitlab.example.com:8443/team/game",
            "git",
            "https://gitlab.example.com:8443/team/game.git",
        ),
        ("ssh://git@codeberg.org/a/b", "git:codeberg.org/a/b", "git", "ssh://codeberg.org/a/b"),
    ],
)
def test_git_sources_are_named_without_credentials(url, base, origin, display):
    source = parse_git_source(url)
    assert (source.project_base, source.origin, source.display) == (base, origin, display)
    assert "s3cret" not in source.project_base + source.display


def test_cli_sends_urls_as_git_and_local_repositories_as_their_commit_tree(tmp_path: Path, git_env, settings):
    assert looks_like_git_url("https://github.com/a/b") and looks_like_git_url("git@github.com:a/b.git")
    assert not looks_like_git_url(str(tmp_path)) and not looks_like_git_url("game.tar.gz")
    assert submit_request("https://github.com/a/b", "p", ref="main", settings=settings).WhichOneof("input") == "git_url"
    repo = make_repo(tmp_path / "demos", from_folder=COLLECTION)
    (repo / "untracked.gd").write_text("extends Node\n")
    for target in (str(repo), repo.as_uri()):
        local = submit_request(target, "p", git=True, settings=settings)
        # The content of the commit, not the path: the gateway may be another machine.
        assert local.WhichOneof("input") == "archive" and local.project_id == "git:demos"
        assert str(repo) not in local.SerializeToString().decode("latin-1")
        submission = collect(archive=local.archive, archive_name=local.archive_name, project_id=local.project_id, settings=settings)
        names = {f.source_file for p in submission.projects for f in p.files}
        assert "untracked.gd" not in names and "project.godot" in names
