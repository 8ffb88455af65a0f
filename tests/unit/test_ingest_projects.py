"""Project roots, the include/exclude policy and the input forms, on fixture trees.

Fixtures: tests/corpus/ingest/collection (a demo collection with nested Godot 3
and Godot 4 projects, a malformed scene, C#, a stray script), and the
dodge_the_creeps project of seed 001 (its expanded text and its file tree).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from godot_rag.domain.chunking.direct import chunk_direct
from godot_rag.domain.ingest.policy import (
    ENTRY_FILE,
    REASON_BINARY,
    REASON_BINARY_CONTENT,
    REASON_CACHE,
    REASON_CSHARP,
    REASON_DOCS,
    REASON_GDIGNORE,
    REASON_NESTED_PROJECT,
    REASON_SPECIAL,
    REASON_UNKNOWN,
    IngestError,
    TreeEntry,
    decide_tree,
    expand,
    flatten,
    projects_from_expanded_text,
    scan_projects,
    split_expanded_text,
)
from godot_rag.domain.models import PARSE_PARTIAL
from godot_rag.pipeline.submit import collect
from godot_rag.settings import load_settings

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "ingest"
COLLECTION = CORPUS / "collection"
DODGE_TEXT = CORPUS / "dodge_the_creeps.txt"
DODGE_TREE = CORPUS / "dodge_the_creeps.tree.txt"
PLAYER_GD_SHA = "87f4fcf7481dba031f74a363475cee75b81c3d42eb1347b318f6b824e37329a6"
MB = 1 << 20


@pytest.fixture
def settings(tmp_path: Path):
    return load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path / "data")})


def by_root(projects) -> dict[str, dict]:
    return {p.root: {f.source_file: f for f in p.files} for p in projects}


# ---------------------------------------------------------------- project roots


def test_every_project_godot_folder_is_its_own_project():
    projects = by_root(scan_projects(COLLECTION, max_bytes=MB))
    assert list(projects) == ["", "2d/platformer_g3", "2d/platformer_g3/tests/fixture_project", "3d/shooter_g4"]
    # Paths are relative to each project's root, in sorted order.
    assert list(projects["3d/shooter_g4"]) == [
        "Shooter.cs",
        "player.gd",
        "player.gd.uid",
        "project.godot",
        "scenes/broken.tscn",
        "scenes/main.tscn",
    ]
    assert list(projects["2d/platformer_g3/tests/fixture_project"]) == ["check.gd", "project.godot"]
    # A file belongs to the deepest root above it only.
    assert "tests/fixture_project/check.gd" not in projects["2d/platformer_g3"]


def test_files_outside_every_root_form_the_top_level_project_which_lists_the_nested_roots():
    top = by_root(scan_projects(COLLECTION, max_bytes=MB))[""]
    assert top["tools/export_all.gd"].included and top["tools/export_all.gd"].source_kind == "gdscript"
    assert top["README.md"].excluded_reason == REASON_DOCS
    assert top["2d/platformer_g3/"].excluded_reason == REASON_NESTED_PROJECT
    assert top["3d/shooter_g4/"].excluded_reason == REASON_NESTED_PROJECT
    # A root nested in another project is listed by that project, not by the top.
    assert "2d/platformer_g3/tests/fixture_project/" not in top
    inner = by_root(scan_projects(COLLECTION, max_bytes=MB))["2d/platformer_g3"]
    # ... even though the folder above it holds a .gdignore (the outer project ignores it, it is still a project).
    assert inner["tests/fixture_project/"].excluded_reason == REASON_NESTED_PROJECT
    assert inner["tests/.gdignore"].included


def test_collect_names_each_project_and_the_nested_folder_entries(settings):
    submission = collect(path=str(COLLECTION), settings=settings, local_caller=True)
    assert submission.source_origin == "local_directory"
    ids = [p.project_id for p in submission.projects]
    assert ids == [
        "local:collection",
        "local:collection/2d/platformer_g3",
        "local:collection/2d/platformer_g3/tests/fixture_project",
        "local:collection/3d/shooter_g4",
    ]
    top = {f.source_file: f for f in submission.projects[0].files}
    assert top["3d/shooter_g4/"].excluded_reason.endswith("(local:collection/3d/shooter_g4)")
    override = collect(path=str(COLLECTION), project_id="demos", settings=settings, local_caller=True)
    assert [p.project_id for p in override.projects][:2] == ["demos", "demos/2d/platformer_g3"]


def test_a_project_at_the_top_with_a_nested_one_makes_no_extra_leftover_project(tmp_path: Path):
    (tmp_path / "project.godot").write_text("config_version=5\n")
    (tmp_path / "main.gd").write_text("extends Node\n")
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "project.godot").write_text("config_version=4\n")
    projects = by_root(scan_projects(tmp_path, max_bytes=MB))
    assert list(projects) == ["", "demo"]
    assert projects[""]["demo/"].excluded_reason == REASON_NESTED_PROJECT
    assert list(projects["demo"]) == ["project.godot"]


def test_without_project_godot_the_whole_input_is_one_project(tmp_path: Path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "a.gd").write_text("extends Node\n")
    projects = scan_projects(tmp_path, max_bytes=MB)
    assert [(p.root, [f.source_file for f in p.files]) for p in projects] == [("", ["scripts/a.gd"])]


def test_project_godot_inside_an_editor_cache_is_not_a_root(tmp_path: Path):
    text = "# project.godot\nconfig_version=5\n\n# .godot/editor/project.godot\nconfig_version=5\n"
    projects = by_root(projects_from_expanded_text(text, max_bytes=MB))
    assert list(projects) == [""]
    assert projects[""][".godot/editor/project.godot"].excluded_reason == REASON_CACHE


# ---------------------------------------------------------------- the policy


def test_godot3_and_godot4_scenes_resources_and_configs_are_included_with_their_kind():
    projects = by_root(scan_projects(COLLECTION, max_bytes=MB))
    g3, g4 = projects["2d/platformer_g3"], projects["3d/shooter_g4"]
    kinds = {name: (f.included, f.source_kind) for name, f in {**g3, **{"g4/" + k: v for k, v in g4.items()}}.items()}
    assert kinds["project.godot"] == (True, "project_config")
    assert kinds["player.tscn"] == (True, "scene")
    assert kinds["default_env.tres"] == (True, "resource")
    assert kinds["g4/project.godot"] == (True, "project_config")
    assert kinds["g4/scenes/main.tscn"] == (True, "scene")
    assert kinds["g4/player.gd.uid"] == (True, "uid")
    assert g4["Shooter.cs"].excluded_reason == REASON_CSHARP
    assert g3["project.godot"].data.startswith(b"; Engine configuration file.")
    assert hashlib.sha256(g3["player.gd"].data).hexdigest() == g3["player.gd"].sha256


def test_a_malformed_scene_is_included_and_its_errors_come_from_the_chunker():
    f = by_root(scan_projects(COLLECTION, max_bytes=MB))["3d/shooter_g4"]["scenes/broken.tscn"]
    assert f.included and f.source_kind == "scene"
    result = chunk_direct(f.source_file, f.source_kind, f.data, expected_sha256=f.sha256)
    assert result.status == PARSE_PARTIAL
    assert [e.line for e in result.errors] == [3, 7]
    assert result.chunks, "the parts that parse are still chunked"


def test_binary_content_is_detected_whatever_the_extension(tmp_path: Path):
    root = tmp_path / "p"
    shutil.copytree(COLLECTION / "3d" / "shooter_g4", root)
    (root / "fake.gd").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (root / "latin1.tscn").write_bytes('[gd_scene format=3]\n[node name="Caf\xe9"]\n'.encode("latin-1"))
    (root / "nul.cfg").write_bytes(b"[a]\nx=1\0\n")
    (root / "icon.png").write_bytes(b"not even a png, the extension decides")
    (root / "notes.yml").write_text("key: value\n")
    (root / "blob.bin2").write_bytes(bytes(range(256)))
    files = {f.source_file: f for f in scan_projects(root, max_bytes=MB)[0].files}
    assert files["fake.gd"].excluded_reason == REASON_BINARY_CONTENT and files["fake.gd"].source_kind == "gdscript"
    # A text file in a legacy encoding is told apart from a binary one: where the first such byte is, what to do.
    assert files["latin1.tscn"].excluded_reason == (
        "not UTF-8: byte 0xE9 at line 2, column 16 is not valid UTF-8 (a file saved in a legacy encoding such as "
        "Windows-1252?); Godot reads text files as UTF-8: save it as UTF-8 to have it analysed"
    )
    assert files["nul.cfg"].excluded_reason == REASON_BINARY_CONTENT
    assert files["icon.png"].excluded_reason == REASON_BINARY
    assert files["notes.yml"].excluded_reason.startswith(REASON_UNKNOWN)
    assert files["blob.bin2"].excluded_reason == REASON_BINARY  # unknown extension, binary content
    assert not any(f.data for f in files.values() if not f.included), "excluded files keep no bytes for the pipeline"


def test_oversized_files_are_listed_with_their_size_and_never_read(tmp_path: Path):
    (tmp_path / "big.gd").write_text("var x = 1\n" * 300)
    (tmp_path / "big.png").write_bytes(b"\0" * 5000)

    def must_not_read() -> bytes:
        raise AssertionError("an oversized file was read")

    projects = decide_tree([TreeEntry("huge.tscn", ENTRY_FILE, size=10_000, read=must_not_read)], max_bytes=1000) + scan_projects(
        tmp_path, max_bytes=1000
    )
    files = {f.source_file: f for p in projects for f in p.files}
    assert files["huge.tscn"].excluded_reason == "oversized: 10000 bytes, over the limit of 1000"
    assert files["huge.tscn"].source_kind == "scene"
    assert files["big.gd"].excluded_reason == "oversized: 3000 bytes, over the limit of 1000"
    assert files["big.png"].excluded_reason == REASON_BINARY  # the kind of file says more than its size


def test_unreadable_files_are_listed_with_the_reason(tmp_path: Path):
    gone = tmp_path / "vanished.gd"
    projects = decide_tree([TreeEntry("vanished.gd", ENTRY_FILE, size=10, read=gone.read_bytes)], max_bytes=MB)
    f = projects[0].files[0]
    assert not f.included and f.excluded_reason == "unreadable: No such file or directory"


def test_device_files_and_pipes_are_listed_not_read(tmp_path: Path):
    (tmp_path / "project.godot").write_text("config_version=5\n")
    os.mkfifo(tmp_path / "pipe.gd")  # reading it would block forever
    files = {f.source_file: f for f in scan_projects(tmp_path, max_bytes=MB)[0].files}
    assert files["pipe.gd"].excluded_reason == REASON_SPECIAL


def test_symbolic_links_are_never_followed(tmp_path: Path):
    root = tmp_path / "game"
    (root / "sub").mkdir(parents=True)
    (root / "project.godot").write_text("config_version=5\n")
    (root / "player.gd").write_text("extends Node\n")
    (tmp_path / "secret.gd").write_text("var password = 1\n")
    (root / "alias.gd").symlink_to("player.gd")
    (root / "sub" / "up.gd").symlink_to("../player.gd")
    (root / "escape.gd").symlink_to("../secret.gd")
    (root / "abs_in.gd").symlink_to(root / "player.gd")
    (root / "abs_out.gd").symlink_to("/etc/passwd")
    (root / "dir_out").symlink_to(tmp_path)
    files = {f.source_file: f for f in scan_projects(root, max_bytes=MB)[0].files}
    for name in ("alias.gd", "sub/up.gd", "abs_in.gd"):
        assert not files[name].included and "not followed; its target" in files[name].excluded_reason, name
    for name in ("escape.gd", "abs_out.gd", "dir_out"):
        assert not files[name].included and "outside the project root" in files[name].excluded_reason, name
    assert not any(b"password" in f.data for f in files.values())
    assert "dir_out/secret.gd" not in files


def test_a_link_out_of_a_nested_project_is_outside_that_project():
    entries = [
        TreeEntry("a/project.godot", ENTRY_FILE, size=0, read=bytes),
        TreeEntry("b/project.godot", ENTRY_FILE, size=0, read=bytes),
        TreeEntry("a/link.gd", "symlink", link_target="../b/project.godot"),
    ]
    files = by_root(decide_tree(entries, max_bytes=MB))
    assert "outside the project root" in files["a"]["link.gd"].excluded_reason


def test_the_same_path_twice_in_one_input_is_an_error():
    with pytest.raises(IngestError, match="twice"):
        decide_tree([TreeEntry("a.gd", ENTRY_FILE, read=bytes), TreeEntry("a.gd", "symlink", link_target="b")], max_bytes=MB)


# ---------------------------------------------------------------- seed 001: dodge_the_creeps

SEED_DOCS = {"LICENSE", "README.md", "fonts/FONTLOG.txt", "fonts/LICENSE.txt"}


def expected_kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name == "project.godot":
        return "project_config"
    if name in (".gitignore", ".gdignore"):
        return "ignore"
    return {".gd": "gdscript", ".tscn": "scene", ".import": "import_meta", ".uid": "uid"}["." + name.rsplit(".", 1)[-1]]


def test_dodge_expanded_text_follows_the_seed_policy_table(settings):
    text = DODGE_TEXT.read_text(encoding="utf-8")
    submission = collect(path=str(DODGE_TEXT), settings=settings, local_caller=True)
    assert submission.source_origin == "expanded_text"
    assert len(submission.projects) == 1 and submission.projects[0].root == ""
    assert submission.projects[0].project_id == "expanded:dodge_the_creeps"
    files = submission.projects[0].files
    blocks = [b.source_file for b in split_expanded_text(text)]
    assert [f.source_file for f in files] == sorted(blocks)  # every block listed once, in path order
    for f in files:
        if f.source_file in SEED_DOCS:
            assert (f.included, f.excluded_reason) == (False, REASON_DOCS), f
        else:
            assert (f.included, f.source_kind) == (True, expected_kind(f.source_file)), f
    by_name = {f.source_file: f for f in files}
    assert by_name["player.gd"].sha256 == PLAYER_GD_SHA
    assert by_name["screenshots/.gdignore"].included and by_name["screenshots/.gdignore"].data == b""
    assert sum(f.included for f in files) == 29 and sum(not f.included for f in files) == 4


def _binary_bytes(name: str) -> bytes:
    # Real magic numbers followed by NUL-laden bodies: binary by extension and by content.
    magic = {
        ".png": b"\x89PNG\r\n\x1a\n",
        ".ogg": b"OggS\0\x02",
        ".wav": b"RIFF\x24\0\0\0WAVEfmt ",
        ".ttf": b"\0\x01\0\0\0\x10",
        ".webp": b"RIFF\x24\0\0\0WEBPVP8 ",
    }
    return magic["." + name.rsplit(".", 1)[-1]] + bytes(200)


def build_dodge_folder(root: Path) -> None:
    """The seed's file tree: text files from the expanded text, the binaries it leaves out made up."""
    blocks = {b.source_file: b.text for b in split_expanded_text(DODGE_TEXT.read_text(encoding="utf-8"))}
    for rel in DODGE_TREE.read_text(encoding="utf-8").split("\n"):
        if not rel:
            continue
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel in blocks:
            target.write_bytes(blocks[rel].encode("utf-8"))
        else:
            target.write_bytes(_binary_bytes(rel))


def test_dodge_folder_from_the_seed_tree_lists_every_path_with_the_seed_decision(tmp_path: Path):
    root = tmp_path / "dodge_the_creeps"
    build_dodge_folder(root)
    tree = [line for line in DODGE_TREE.read_text(encoding="utf-8").split("\n") if line]
    assert len(tree) == 48
    projects = scan_projects(root, max_bytes=2 * MB)
    assert len(projects) == 1
    files = {f.source_file: f for f in projects[0].files}
    assert sorted(files) == sorted(tree), "nothing of the seed tree is dropped from the listing"
    blocks = {b.source_file for b in split_expanded_text(DODGE_TEXT.read_text(encoding="utf-8"))}
    for rel, f in files.items():
        if rel == "screenshots/dodge.png":
            assert f.excluded_reason == REASON_GDIGNORE  # Godot ignores the folder; so does the analysis
        elif rel in SEED_DOCS:
            assert f.excluded_reason == REASON_DOCS
        elif rel not in blocks:
            assert f.excluded_reason == REASON_BINARY, rel  # images, audio, the font
        else:
            assert (f.included, f.source_kind) == (True, expected_kind(rel)), rel
    assert files["player.gd"].sha256 == PLAYER_GD_SHA


def test_expand_of_the_dodge_folder_reproduces_the_seed_text(tmp_path: Path):
    root = tmp_path / "dodge_the_creeps"
    build_dodge_folder(root)
    text = expand(flatten(scan_projects(root, max_bytes=2 * MB, keep_text=True)))
    # The seed stops right after the last header; expand ends every block with its blank separator line.
    assert text == DODGE_TEXT.read_text(encoding="utf-8") + "\n"


def test_cli_expand_writes_the_text_and_lists_what_has_none(tmp_path: Path, capsys, monkeypatch):
    from godot_rag.cli import main

    root = tmp_path / "dodge_the_creeps"
    build_dodge_folder(root)
    monkeypatch.setenv("GODOT_RAG_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "out.txt"
    assert main(["expand", str(root), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == DODGE_TEXT.read_text(encoding="utf-8") + "\n"
    err = capsys.readouterr().err.replace("\n", " ")
    assert "excluded art/gameover.wav: binary file" in err


# ---------------------------------------------------------------- input forms


def test_expanded_text_with_several_project_roots(settings):
    text = (
        "# README.md\nA collection.\n\n# a/project.godot\nconfig_version=4\n\n# a/player.gd\nextends KinematicBody2D\n\n"
        "# b/project.godot\nconfig_version=5\n"
    )
    submission = collect(expanded_text=text, settings=settings)
    assert [(p.root, [f.source_file for f in p.files]) for p in submission.projects] == [
        ("", ["README.md", "a/", "b/"]),
        ("a", ["player.gd", "project.godot"]),
        ("b", ["project.godot"]),
    ]
    assert all(p.project_id.startswith("expanded:") for p in submission.projects)


@pytest.mark.parametrize(
    "text,given,kind,included",
    [
        ("extends KinematicBody2D\n\nfunc _physics_process(delta):\n    move_and_slide()\n", "", "gdscript", True),
        ("[gd_scene load_steps=2 format=2]\n", "", "scene", True),
        ('config_version=5\n\n[application]\nconfig/name="x"\n', "", "project_config", True),
        ("uid://b7x1v3lq2m4kd\n", "uid", "uid", True),
        ("# Title\n", "markdown", "markdown", False),
    ],
)
def test_pasted_snippet(settings, text, given, kind, included):
    submission = collect(snippet=text, snippet_kind=given, settings=settings)
    (project,) = submission.projects
    (f,) = project.files
    assert submission.source_origin == project.source_origin == "pasted_snippet"
    assert f.source_file.startswith("pasted://snippet-") and (f.source_kind, f.included) == (kind, included)
    if included:
        assert f.sha256 == hashlib.sha256(text.encode()).hexdigest()
    if kind == "gdscript":
        assert f.source_file.endswith(".gd")


def test_a_binary_snippet_is_excluded(settings):
    (project,) = collect(snippet="\0\0\0binary", snippet_kind="gdscript", settings=settings).projects
    assert project.files[0].excluded_reason == REASON_BINARY_CONTENT


def test_missing_input_is_a_clear_error(settings, tmp_path: Path):
    with pytest.raises(IngestError, match="no such file or folder"):
        collect(path=str(tmp_path / "nope"), settings=settings, local_caller=True)
    with pytest.raises(IngestError, match="nothing to analyse"):
        collect(settings=settings)
    (tmp_path / "garbage.txt").write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(IngestError, match="not UTF-8"):
        collect(path=str(tmp_path / "garbage.txt"), settings=settings, local_caller=True)


def test_a_file_name_that_is_not_utf8_is_listed_not_read(tmp_path: Path):
    (tmp_path / "project.godot").write_text("config_version=5\n")
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.gd"), "wb") as fh:
        fh.write(b"extends Node\n")
    files = {f.source_file: f for f in scan_projects(tmp_path, max_bytes=MB)[0].files}
    assert files["caf\ufffd.gd"].excluded_reason == "file name is not valid UTF-8: not read"
    assert all(name.encode("utf-8") for name in files)


def test_the_reason_of_content_that_is_not_text_points_at_the_first_byte_that_is_not_utf8():
    from godot_rag.domain.ingest.policy import binary_content_reason, looks_binary

    assert binary_content_reason("extends Node\n# café ✓\n".encode()) == "" and not looks_binary(b"")
    assert binary_content_reason(b"\xef\xbb\xbfextends Node\r\n") == ""  # a BOM and CRLF are text
    assert binary_content_reason(b"extends Node\n\0") == REASON_BINARY_CONTENT  # NUL wins over any encoding
    reason = binary_content_reason(b"extends Node\n\n\tvar s = '\x93quoted\x94'\n")
    assert reason.startswith("not UTF-8: byte 0x93 at line 3, column 11 ") and looks_binary(b"\x93")
    # A sequence cut short at the end of the file is reported where it starts.
    assert binary_content_reason(b"var x = 1 # \xe2\x82").startswith("not UTF-8: byte 0xE2 at line 1, column 13 ")
