"""A submission holds no project in memory: files are decided, let go, and read again one at a time."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from godot_rag.domain.ingest.policy import IngestError
from godot_rag.pipeline import submit as submit_module
from godot_rag.pipeline.submit import _read_batch, collect, collecting, content_of, project_symbols
from godot_rag.settings import load_settings

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "godot3_project"


def settings_for(tmp_path: Path):
    return load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path / "data")})


def included(submission) -> list:
    return [f for p in submission.projects for f in p.files if f.included]


def test_a_streamed_folder_holds_readers_not_bytes_and_reads_the_same_content(tmp_path: Path):
    settings = settings_for(tmp_path)
    held = included(collect(path=str(SAMPLE), settings=settings, local_caller=True))
    with collecting(path=str(SAMPLE), settings=settings, local_caller=True) as submission:
        streamed = included(submission)
        assert streamed and all(f.data == b"" and f.read is not None for f in streamed)
        assert [(f.source_file, f.sha256) for f in streamed] == [(f.source_file, f.sha256) for f in held]
        assert [content_of(f) for f in streamed] == [f.data for f in held]
        # The project index and scopes are the same whether the bytes were held or read again.
        assert project_symbols(streamed) == project_symbols(held)
        assert project_symbols(streamed)[0]


def test_a_file_changed_after_it_was_decided_is_refused(tmp_path: Path):
    project = tmp_path / "game"
    project.mkdir()
    (project / "a.gd").write_text("extends Node\n")
    with collecting(path=str(project), settings=settings_for(tmp_path), local_caller=True) as submission:
        (f,) = included(submission)
        (project / "a.gd").write_text("extends Node2D\n")
        with pytest.raises(IngestError, match="changed while the project was submitted"):
            content_of(f)


def test_an_uploaded_archive_stays_extracted_until_the_submission_ends(tmp_path: Path):
    settings = settings_for(tmp_path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("game/project.godot", b"config_version=4\n"), ("game/player.gd", b"extends KinematicBody2D\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    with collecting(archive=buf.getvalue(), archive_name="game.tar.gz", settings=settings) as submission:
        files = included(submission)
        assert sorted(content_of(f) for f in files) == [b"config_version=4\n", b"extends KinematicBody2D\n"]
        assert any(settings.work_dir.iterdir())
    assert not any(settings.work_dir.iterdir()), "the working folder outlived the submission"


def test_contents_are_read_in_bounded_batches(tmp_path: Path, monkeypatch):
    project = tmp_path / "many"
    project.mkdir()
    for i in range(10):
        (project / f"s{i}.gd").write_text(f"extends Node\n# {i}\n" + "#" * 1000 + "\n")
    monkeypatch.setattr(submit_module, "BLOB_BATCH_BYTES", 2500)
    with collecting(path=str(project), settings=settings_for(tmp_path), local_caller=True) as submission:
        files = included(submission)
        batches, i = [], 0
        while i < len(files):
            batch, i = _read_batch(files, i)
            batches.append(batch)
    assert [len(b) for b in batches] == [3, 3, 3, 1]  # each batch stops once it holds 2,500 bytes or more
    assert sorted(sha for b in batches for sha, _ in b) == sorted(f.sha256 for f in files)
