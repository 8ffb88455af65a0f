"""`godot-rag patch ANALYSIS_ID`: the gateway patches the files stored with an analysis (AnalysisService.Patch),
and --apply writes into a local folder only when it holds exactly the analysed content."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import grpc
import pytest

from godot_rag.cli import DEFAULT_PROMPT
from godot_rag.pipeline.patch import basis_lines, patch_project, read_project
from godot_rag.v1 import services_pb2 as spb

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "godot3_project"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
            "HOME": str(root),
        },
    )


@pytest.fixture()
def project(tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(SAMPLE, root)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "godot 3")
    return root


def test_patch_rpc_and_cli_by_analysis_id(stack, project, tmp_path, monkeypatch, capsys):
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=DEFAULT_PROMPT, path=str(SAMPLE)), timeout=120)
    aid = submitted.analysis_id
    response = stack.gateway.Patch(spb.PatchRequest(analysis_id=aid), timeout=300)

    # The gateway's patch of the stored blobs is the patch of the same files read locally.
    local = patch_project(read_project(SAMPLE))
    assert response.diff == local.diff and response.diff.startswith("--- a/")
    assert [json.loads(line) for line in response.basis_jsonl.splitlines()] == basis_lines(local)
    assert dict(response.summary) == local.summary() and response.summary["hunks"] > 0
    by_file = {f.source_file: f for f in response.files}
    player = next(f for f in local.files if f.path == "player.gd")
    remote = by_file["player.gd"]
    assert remote.changed and remote.patched_text == player.patched and len(remote.sha256) == 64
    assert all(c.record_id and c.rule and 0 < c.confidence <= 1 for h in remote.hunks for c in h.changes)
    assert {t.rule for t in remote.todos} == {t.rule for t in player.todos}

    with pytest.raises(grpc.RpcError) as missing:
        stack.gateway.Patch(spb.PatchRequest(analysis_id="a" + "0" * 20), timeout=30)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND

    from godot_rag.cli import main

    monkeypatch.setenv("GODOT_RAG_GATEWAY_ADDR", stack.runtime["gateway"])
    out = tmp_path / "changes.diff"
    assert main(["patch", aid, "--out", str(out)]) == 0
    assert out.read_text() == local.diff
    assert (tmp_path / "changes.basis.jsonl").read_text() == response.basis_jsonl
    # An analysis id says nothing about where the project is: --apply needs the folder.
    assert main(["patch", aid, "--apply"]) == 1
    # A folder whose file differs from the analysed content is refused, before anything is written.
    hud = project / "hud.gd"
    hud.write_text(hud.read_text() + "\n# edited after the analysis\n")
    _git(project, "commit", "-qam", "edit")
    assert main(["patch", aid, "--apply", str(project)]) == 1
    assert "not the content the patch was made for" in capsys.readouterr().err
    assert "KinematicBody2D" in (project / "player.gd").read_text()
    _git(project, "reset", "-q", "--hard", "HEAD~1")
    # A dirty tree is refused too.
    (project / "notes.txt").write_text("x")
    assert main(["patch", aid, "--apply", str(project)]) == 1
    (project / "notes.txt").unlink()
    assert main(["patch", aid, "--apply", str(project), "--json", str(tmp_path / "s.json")]) == 0
    assert (project / "player.gd").read_text() == player.patched
    assert json.loads((tmp_path / "s.json").read_text())["summary"]["applied"] == response.summary["files_changed"]
