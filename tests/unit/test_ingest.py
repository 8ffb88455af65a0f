from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from godot_rag.domain.ingest.policy import (
    REASON_BINARY,
    REASON_CSHARP,
    REASON_DOCS,
    REASON_GDIGNORE,
    IngestError,
    classify_path,
    decide,
    expand,
    files_from_expanded_text,
    flatten,
    guess_snippet_kind,
    scan_folder,
    scan_projects,
    split_expanded_text,
)

PLAYER_GD_SHA = "87f4fcf7481dba031f74a363475cee75b81c3d42eb1347b318f6b824e37329a6"


CORPUS_DODGE = Path(__file__).resolve().parent.parent / "corpus" / "ingest" / "dodge_the_creeps.txt"


# The design's worked example project text, copied verbatim into the corpus (origin: tests/corpus/README.md).
DODGE_TEXT_SHA = "03831306209443e9e5a713c1e95dc18647fa536c533f4fc468a192696fb084f5"


def test_corpus_copy_of_the_dodge_text_is_the_designs_text():
    assert hashlib.sha256(CORPUS_DODGE.read_bytes()).hexdigest() == DODGE_TEXT_SHA


def test_expanded_player_gd_has_the_worked_examples_sha256():
    blocks = {b.source_file: b for b in split_expanded_text(CORPUS_DODGE.read_text(encoding="utf-8"))}
    assert hashlib.sha256(blocks["player.gd"].text.encode()).hexdigest() == PLAYER_GD_SHA
    # The Markdown title right under '# README.md' is content, not a file header.
    assert "Dodge the Creeps" not in blocks
    assert blocks["README.md"].text.startswith("# Dodge the Creeps\n")
    assert "art/House In a Forest Loop.ogg.import" in blocks


def test_mini_dodge_sample_splits_into_the_seed_files(repo: Path):
    blocks = split_expanded_text((repo / "samples" / "mini_dodge.txt").read_text())
    assert [b.source_file for b in blocks] == ["project.godot", "player.gd", "player.tscn", "enemy.gd"]
    by_name = {b.source_file: b for b in blocks}
    assert by_name["player.gd"].header_line == 8
    assert by_name["player.gd"].text.splitlines()[0] == "extends Area2D"
    assert len(by_name["player.gd"].text.splitlines()) == 31  # E009-E039
    assert (
        by_name["project.godot"].text
        == 'config_version=5\n\n[application]\nconfig/name="Mini Dodge"\nrun/main_scene="res://player.tscn"\n'
    )
    assert by_name["enemy.gd"].text.splitlines()[-1] == "\tvelocity = move_and_slide(velocity)"


def test_expand_then_split_round_trips(repo: Path):
    projects = scan_projects(repo / "samples" / "godot4_project", max_bytes=1 << 20, keep_text=True)
    files = flatten(projects)
    text = expand(files)
    assert "# README.md\n" in text  # documentation is shown, as in seed 001's expanded project
    assert "# icon.png\n" not in text  # binaries have no text to show
    again = {f.source_file: f for f in files_from_expanded_text(text, max_bytes=1 << 20)}
    shown = {f.source_file: f for f in files if f.included or f.has_text}
    assert set(again) == set(shown)
    for name, f in shown.items():
        assert (again[name].included, again[name].excluded_reason, again[name].sha256) == (f.included, f.excluded_reason, f.sha256)


@pytest.mark.parametrize(
    "path,kind,reason",
    [
        ("player.gd", "gdscript", ""),
        ("project.godot", "project_config", ""),
        ("scenes/main.tscn", "scene", ""),
        ("theme.tres", "resource", ""),
        ("icon.png.import", "import_meta", ""),
        ("player.gd.uid", "uid", ""),
        ("screenshots/.gdignore", "ignore", ""),
        ("bin/noise.gdnlib", "config", ""),  # GDNative (Godot 3) and GDExtension (Godot 4) libraries
        ("bin/noise.gdextension", "config", ""),
        ("bin/noise.gdns", "resource", ""),  # a NativeScript text resource
        ("README.md", "", REASON_DOCS),
        ("LICENSE", "", REASON_DOCS),
        ("fonts/FONTLOG.txt", "", REASON_DOCS),
        ("Player.cs", "", REASON_CSHARP),
        ("Game.csproj", "text", ""),  # its Godot SDK says the C# scripts' version; the scripts stay excluded
        ("Game.sln", "", REASON_CSHARP),
        ("art/enemy.png", "", REASON_BINARY),
        ("fonts/Xolonium-Regular.ttf", "", REASON_BINARY),
    ],
)
def test_classify_path(path, kind, reason):
    assert classify_path(path) == (kind, reason)


def test_binary_content_with_a_text_extension_is_excluded():
    f = decide("fake.gd", b"\x89PNG\r\n\x1a\n\0\0\0", max_bytes=1000)
    assert not f.included and "binary" in f.excluded_reason


def test_oversized_file_is_excluded_with_its_size():
    f = decide("big.gd", b"var x = 1\n" * 200, max_bytes=100)
    assert not f.included and "oversized: 2000 bytes" in f.excluded_reason


def test_scan_excludes_caches_gdignore_and_symlinks(tmp_path: Path):
    (tmp_path / "project.godot").write_text("config_version=5\n")
    (tmp_path / ".godot" / "imported").mkdir(parents=True)
    (tmp_path / ".godot" / "imported" / "x.ctex").write_bytes(b"\0")
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / ".gdignore").write_text("")
    (tmp_path / "shots" / "a.gd").write_text("extends Node\n")
    (tmp_path / "link.gd").symlink_to("/etc/passwd")
    files = {f.source_file: f for f in scan_folder(tmp_path, max_bytes=1 << 20)}
    assert files["project.godot"].included
    assert ".godot/" in files and "cache" in files[".godot/"].excluded_reason
    assert ".godot/imported/x.ctex" not in files  # the cache folder is one entry, not descended
    # Every file under a .gdignore folder stays listed with the reason; the marker itself is chunked (seed 001).
    assert not files["shots/a.gd"].included and files["shots/a.gd"].excluded_reason == REASON_GDIGNORE
    assert files["shots/.gdignore"].included and files["shots/.gdignore"].source_kind == "ignore"
    assert not files["link.gd"].included and "outside the project root" in files["link.gd"].excluded_reason
    assert list(files) == sorted(files)


def test_expanded_text_without_header_is_an_error():
    with pytest.raises(IngestError):
        split_expanded_text("extends Node\n")


def test_duplicate_file_in_expanded_text_is_an_error():
    with pytest.raises(IngestError):
        split_expanded_text("# a.gd\nextends Node\n\n# a.gd\nextends Node\n")


@pytest.mark.parametrize(
    "text,kind",
    [
        ("extends KinematicBody2D\n", "gdscript"),
        ("[gd_scene load_steps=2 format=2]\n", "scene"),
        ('[gd_resource type="Theme" format=3]\n', "resource"),
        ("config_version=4\n\n[application]\n", "project_config"),
    ],
)
def test_guess_snippet_kind(text, kind):
    assert guess_snippet_kind(text) == kind
