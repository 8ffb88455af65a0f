"""Every input form through the real gateway, NATS JetStream, PostgreSQL and the six services."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import grpc
import psycopg
import pytest

from godot_rag.cli import DEFAULT_PROMPT
from godot_rag.domain.chunking.direct import chunk_direct
from godot_rag.domain.ids import sha256_hex
from godot_rag.domain.ingest.policy import REASON_DOCS, REASON_NESTED_PROJECT
from godot_rag.infra.bus import Bus
from godot_rag.infra.service import ServiceContext
from godot_rag.infra.store import Store
from godot_rag.pipeline.chunking import handle_file_task
from godot_rag.pipeline.export import result_to_json
from godot_rag.settings import load_settings
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "ingest"
COLLECTION = CORPUS / "collection"
DODGE_TEXT = CORPUS / "dodge_the_creeps.txt"


def wait_done(stack, analysis_id: str, timeout_s: float = 300, expected: str = "done") -> dict:
    last = None
    for progress in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=analysis_id), timeout=timeout_s):
        last = progress
    assert last is not None and last.status == expected, f"analysis did not finish as {expected}: {last}"
    return result_to_json(stack.gateway.Get(spb.GetRequest(analysis_id=analysis_id), timeout=60))


def submit(stack, **fields) -> spb.SubmitResponse:
    return stack.gateway.Submit(spb.SubmitRequest(prompt=DEFAULT_PROMPT, **fields), timeout=120)


def files_of(doc: dict) -> dict[str, dict]:
    return {f["source_file"]: f for f in doc["files"]}


def test_a_demo_collection_becomes_one_analysis_per_project_root(stack):
    response = submit(stack, path=str(COLLECTION))
    assert response.source_origin == "local_directory"
    roots = [p.project_root for p in response.projects]
    assert roots == ["", "2d/platformer_g3", "2d/platformer_g3/tests/fixture_project", "3d/shooter_g4"]
    assert (response.analysis_id, response.project_id) == (response.projects[0].analysis_id, response.projects[0].project_id)
    assert len({p.analysis_id for p in response.projects}) == 4
    docs = {p.project_root: wait_done(stack, p.analysis_id) for p in response.projects}

    assert docs["2d/platformer_g3"]["verdict"]["label"] == "godot3", docs["2d/platformer_g3"]["verdict"]
    assert docs["3d/shooter_g4"]["verdict"]["label"] == "godot4", docs["3d/shooter_g4"]["verdict"]
    assert docs["2d/platformer_g3/tests/fixture_project"]["verdict"]["label"] == "godot4"
    for root, doc in docs.items():
        assert doc["project_id"] == "local:collection" + (f"/{root}" if root else "")

    top = files_of(docs[""])
    assert top["README.md"]["status"] == "excluded" and top["README.md"]["excluded_reason"] == REASON_DOCS
    assert top["3d/shooter_g4/"]["excluded_reason"].startswith(REASON_NESTED_PROJECT)
    assert top["tools/export_all.gd"]["status"] == "chunked"

    g4 = files_of(docs["3d/shooter_g4"])
    assert g4["Shooter.cs"]["status"] == "excluded" and "C#" in g4["Shooter.cs"]["excluded_reason"]
    # The malformed scene is chunked as far as it parses, its errors shown on the file.
    broken = g4["scenes/broken.tscn"]
    assert broken["status"] == "chunked" and broken["chunk_count"] > 0
    assert [e["line"] for e in broken["errors"]] == [3, 7]
    # Chunk ids and paths are relative to each project's own root.
    assert any(c["chunk_id"].startswith("scenes/main.tscn:") for c in docs["3d/shooter_g4"]["chunks"])

    # Submitting again finds the same analyses.
    again = submit(stack, path=str(COLLECTION))
    assert [p.analysis_id for p in again.projects] == [p.analysis_id for p in response.projects]
    assert not any(p.created for p in again.projects)


def test_dodge_the_creeps_expanded_text_follows_the_seed_policy(stack):
    response = submit(stack, expanded_text=DODGE_TEXT.read_text(encoding="utf-8"))
    assert response.source_origin == "expanded_text" and len(response.projects) == 1
    assert (response.files_included, response.files_excluded) == (29, 4)
    doc = wait_done(stack, response.analysis_id)
    files = files_of(doc)
    for name in ("LICENSE", "README.md", "fonts/FONTLOG.txt", "fonts/LICENSE.txt"):
        assert files[name]["status"] == "excluded" and files[name]["excluded_reason"] == REASON_DOCS
    for name in (".gitignore", "screenshots/.gdignore", "art/gameover.wav.import", "player.gd.uid"):
        assert files[name]["status"] != "excluded", name
    assert files["player.gd"]["source_sha256"] == "87f4fcf7481dba031f74a363475cee75b81c3d42eb1347b318f6b824e37329a6"
    assert doc["verdict"]["label"] == "godot4", doc["verdict"]


def test_a_git_repository_is_cloned_and_analysed(stack, tmp_path: Path):
    if shutil.which("git") is None:
        pytest.skip("the git program is not installed")
    repo = tmp_path / "shooter"
    shutil.copytree(COLLECTION / "3d" / "shooter_g4", repo)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    for args in (
        ["init", "--quiet"],
        ["add", "-A"],
        ["-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "--quiet", "-m", "x"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)
    response = submit(stack, git_url=repo.as_uri())
    assert response.source_origin == "git" and response.project_id == "git:shooter"
    assert response.input_ref.startswith(repo.as_uri() + "@")
    doc = wait_done(stack, response.analysis_id)
    assert doc["verdict"]["label"] == "godot4"

    with pytest.raises(grpc.RpcError) as err:
        submit(stack, git_url=(tmp_path / "missing.git").as_uri())
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "git clone of" in err.value.details() and "missing.git" in err.value.details()


def _tar_gz(folder: Path, top: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(folder, arcname=top)
    return buf.getvalue()


def test_an_uploaded_archive_and_a_hostile_one(stack):
    data = _tar_gz(COLLECTION / "2d" / "platformer_g3", "platformer")
    response = submit(stack, archive=data, archive_name="platformer.tar.gz")
    assert response.source_origin == "uploaded_file"
    # The archive's own top folder holds project.godot (fixture_project is nested under it).
    assert [p.project_id for p in response.projects] == [
        "archive:platformer/platformer",
        "archive:platformer/platformer/tests/fixture_project",
    ]
    doc = wait_done(stack, response.projects[0].analysis_id)
    assert doc["verdict"]["label"] == "godot3"

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        evil = tarfile.TarInfo("game/link")
        evil.type, evil.linkname = tarfile.SYMTYPE, "../../../etc"
        tf.addfile(evil)
    with pytest.raises(grpc.RpcError) as err:
        submit(stack, archive=buf.getvalue(), archive_name="evil.tar.gz")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "leads outside the extraction folder" in err.value.details()


def test_a_pasted_snippet(stack):
    response = submit(stack, snippet="extends KinematicBody2D\n\nfunc _physics_process(delta):\n\tmove_and_slide(velocity)\n")
    assert response.source_origin == "pasted_snippet" and response.files_included == 1
    doc = wait_done(stack, response.analysis_id)
    (f,) = doc["files"]
    assert f["source_file"].startswith("pasted://snippet-") and f["source_kind"] == "gdscript"
    assert doc["verdict"]["label"] == "godot3"


def test_a_content_mismatch_fails_that_file_visibly_and_the_rest_goes_on(stack, tmp_path: Path):
    """Seed rule 'expanded block sha256 == trace sha256': the stored block no longer matches its hash."""
    project = tmp_path / "mismatch"
    project.mkdir()
    (project / "project.godot").write_text('config_version=5\n\n[application]\nconfig/name="Mismatch"\n')
    good = b"extends CharacterBody2D\n\nfunc _physics_process(delta):\n\tmove_and_slide()\n"
    (project / "good.gd").write_bytes(good)
    tampered = b'[gd_scene format=3]\n\n[node name="Checked" type="Node2D"]\n; integration fixture 7f1c\n'
    (project / "tampered.tscn").write_bytes(tampered)
    # The store already holds "content" under that hash, but other bytes (as after a bad write).
    with psycopg.connect(stack.runtime["pg_dsn"]) as conn:
        conn.execute(
            "insert into godot_rag.blobs (sha256, data, size) values (%s, %s, %s) on conflict do nothing",
            (sha256_hex(tampered), b"[gd_scene format=3]\n", 20),
        )
    response = submit(stack, path=str(project))
    doc = wait_done(stack, response.analysis_id, expected="completed_with_failures")  # never a plain "done"
    files = files_of(doc)
    assert files["tampered.tscn"]["status"] == "failed"
    assert "sha256" in files["tampered.tscn"]["error"] and sha256_hex(tampered) in files["tampered.tscn"]["error"]
    assert not [c for c in doc["chunks"] if c["source_file"] == "tampered.tscn"], "nothing of it was sent on"
    assert files["good.gd"]["status"] == "chunked"
    assert all(c["status"] == "done" for c in doc["chunks"]) and doc["chunks"]
    assert doc["verdict"]["label"] == "godot4"


async def test_a_validation_violation_fails_that_file_visibly_and_the_rest_goes_on(stack):
    """A chunker whose order does not increase: the file fails with the rule's message, shown by Get;
    the other file of the analysis is retrieved, judged and aggregated as usual."""
    settings = load_settings({"GODOT_RAG_DATA_DIR": stack.runtime["data_dir"]})
    store = await Store.open(stack.runtime["pg_dsn"])
    bus = await Bus.connect(stack.runtime["nats_url"], name="test-validation")
    ctx = ServiceContext("chunker", settings, store, bus, asyncio.Event())
    good = b'[gd_scene load_steps=2 format=3]\n\n[node name="A" type="CharacterBody2D"]\n\n[node name="B" type="Sprite2D" parent="."]\n'
    bad = b'[gd_scene load_steps=2 format=3]\n\n[node name="C" type="Node2D"]\n\n[node name="D" type="Label" parent="."]\n'
    aid = "avalidation" + hashlib.sha256(good + bad).hexdigest()[:10]
    files = [
        {
            "source_file": name,
            "source_kind": "scene",
            "included": True,
            "excluded_reason": "",
            "sha256": sha256_hex(data),
            "size": len(data),
            "data": data,
        }
        for name, data in (("good.tscn", good), ("bad.tscn", bad))
    ]
    await store.create_analysis(
        analysis_id=aid,
        project_id="test:validation",
        prompt=DEFAULT_PROMPT,
        source_origin="local_directory",
        input_ref="test",
        pipeline_version="test",
        files=files,
    )

    def real(source_file, source_kind, data, expected_sha256):
        return chunk_direct(source_file, source_kind, data, expected_sha256=expected_sha256)

    def swapped_order(source_file, source_kind, data, expected_sha256):
        from dataclasses import replace

        result = real(source_file, source_kind, data, expected_sha256)
        first, second, *rest = result.chunks
        return replace(
            result, chunks=(replace(first, chunk_order=second.chunk_order), replace(second, chunk_order=first.chunk_order), *rest)
        )

    try:
        for name, data, fn in (("bad.tscn", bad, swapped_order), ("good.tscn", good, real)):
            req = pb.AnalysisRequest(
                analysis_id=aid,
                prompt=DEFAULT_PROMPT,
                project_id="test:validation",
                source_file=name,
                source_kind="scene",
                source_sha256=sha256_hex(data),
                source_origin="local_directory",
            )
            await handle_file_task(ctx, pb.FileTask(analysis_id=aid, request=req).SerializeToString(), fn, "test-validation/1")
    finally:
        await bus.close()
        await store.close()
    doc = await asyncio.to_thread(wait_done, stack, aid, 300, "completed_with_failures")
    by_file = files_of(doc)
    assert by_file["bad.tscn"]["status"] == "failed"
    assert "validation order" in by_file["bad.tscn"]["error"]
    assert not [c for c in doc["chunks"] if c["source_file"] == "bad.tscn"]
    good_chunks = [c for c in doc["chunks"] if c["source_file"] == "good.tscn"]
    assert good_chunks and all(c["status"] == "done" for c in good_chunks)
