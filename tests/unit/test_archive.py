"""Archive extraction: every attack is refused with a clear error, nothing lands outside the working folder.

The malicious archives are built here with zipfile/tarfile.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from godot_rag.domain.ingest.archive import (
    ArchiveError,
    ArchiveLimits,
    Budget,
    archive_stem,
    detect_format,
    resolve_link,
    safe_relative_path,
)
from godot_rag.domain.ingest.policy import REASON_BINARY, IngestError
from godot_rag.infra.fetch import extract_archive
from godot_rag.pipeline.submit import collect
from godot_rag.settings import load_settings

MB = 1 << 20
LIMITS = ArchiveLimits(max_total_bytes=64 * MB, max_ratio=100, max_entries=1000)
PROJECT = b'config_version=5\n\n[application]\nconfig/name="Boxed"\n'
SCRIPT = b"extends CharacterBody2D\n\nfunc _physics_process(delta):\n\tmove_and_slide()\n"


# ---------------------------------------------------------------- builders


def make_zip(path: Path, members: list[tuple]) -> Path:
    """members: (name, bytes) or (ZipInfo, bytes)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


def zip_special(name: str, mode: int, data: bytes = b"") -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # unix: the high 16 bits of external_attr are st_mode
    info.external_attr = mode << 16
    return info


def tar_member(name: str, data: bytes = b"", *, type: bytes = tarfile.REGTYPE, linkname: str = "") -> tuple:
    info = tarfile.TarInfo(name)
    info.type = type
    info.linkname = linkname
    info.size = len(data) if type in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0
    return info, (io.BytesIO(data) if info.size else None)


def make_tar(path: Path, members: list[tuple], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT) as tf:  # type: ignore[call-overload]  # mode: any of the test's
        for info, fileobj in members:
            tf.addfile(info, fileobj)
    return path


class Zeros(io.RawIOBase):
    """n zero bytes without holding them in memory."""

    def __init__(self, n: int):
        self.left = n

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


@pytest.fixture
def work(tmp_path: Path):
    """(archive folder, extraction folder); the test checks nothing appears next to them."""
    src = tmp_path / "src"
    dest = tmp_path / "work" / "tree"
    src.mkdir()
    dest.mkdir(parents=True)
    return src, dest


def everything_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def assert_nothing_outside(tmp_path: Path, archive: Path) -> None:
    # Only the archive itself and the (possibly partly filled) working folder exist.
    outside = {p for p in everything_under(tmp_path) if not p.startswith("work")}
    assert outside == {"src", f"src/{archive.name}"}, outside


# ---------------------------------------------------------------- pure rules


@pytest.mark.parametrize(
    "name,error",
    [
        ("/etc/passwd", "absolute path"),
        ("C:/Windows/evil.gd", "drive letter"),
        ("../evil.gd", "'..'"),
        ("a/../../evil.gd", "'..'"),
        ("..\\..\\evil.gd", "'..'"),
        ("a\0b", "NUL"),
        ("./", "empty path"),
    ],
)
def test_unsafe_member_names_are_refused(name, error):
    with pytest.raises(ArchiveError, match=error):
        safe_relative_path(name)


def test_safe_member_names_are_normalised():
    assert safe_relative_path("./game//player.gd") == "game/player.gd"
    assert safe_relative_path("game\\scenes\\main.tscn") == "game/scenes/main.tscn"


def test_link_targets_resolve_inside_the_tree_or_are_refused():
    assert resolve_link("game/alias.gd", "player.gd") == "game/player.gd"
    assert resolve_link("game/sub/up.gd", "../player.gd") == "game/player.gd"
    with pytest.raises(ArchiveError, match="absolute target"):
        resolve_link("game/x", "/etc/passwd")
    with pytest.raises(ArchiveError, match="leads outside"):
        resolve_link("game/x", "../../etc/passwd")


def test_budget_counts_real_bytes_against_total_and_ratio():
    b = Budget(ArchiveLimits(max_total_bytes=10 * MB, max_ratio=100, max_entries=2), archive_bytes=10_000)
    b.add_bytes(MB, "a")  # ratio 104, but not past the 1 MiB floor below which ratios are not judged
    with pytest.raises(ArchiveError, match="ratio"):
        b.add_bytes(100, "b")
    total = Budget(ArchiveLimits(max_total_bytes=100, max_ratio=1e9, max_entries=2), archive_bytes=None)
    with pytest.raises(ArchiveError, match="limit of 100 bytes"):
        total.add_bytes(101, "c")
    entries = Budget(ArchiveLimits(max_total_bytes=100, max_ratio=100, max_entries=2), archive_bytes=None)
    entries.add_entry("1")
    entries.add_entry("2")
    with pytest.raises(ArchiveError, match="more than 2 entries"):
        entries.add_entry("3")


def test_format_is_read_from_content_and_name_from_the_suffix(tmp_path: Path):
    z = make_zip(tmp_path / "a.bin", [("x", b"1")])
    t = make_tar(tmp_path / "b.bin", [tar_member("x", b"1")])
    assert detect_format(z.read_bytes()[:1024]) == "zip"
    assert detect_format(t.read_bytes()[:1024]) == "tar.gz"
    assert detect_format(b"# player.gd\nextends Node\n") == ""
    assert archive_stem("dodge_the_creeps.tar.gz") == "dodge_the_creeps"
    assert archive_stem("/x/y/game.ZIP") == "game"


# ---------------------------------------------------------------- attacks

ATTACKS_ZIP: dict[str, tuple[list[tuple[str | zipfile.ZipInfo, bytes]], str]] = {
    "absolute": ([("/tmp/godot_rag_evil.gd", b"x")], "absolute path"),
    "dotdot": ([("game/../../evil.gd", b"x")], "'..'"),
    "backslash_dotdot": ([("..\\evil.gd", b"x")], "'..'"),
    "symlink_out": ([(zip_special("game/link.gd", stat.S_IFLNK | 0o777), b"../../etc/passwd")], "leads outside"),
    "symlink_abs": ([(zip_special("game/link.gd", stat.S_IFLNK | 0o777), b"/etc/passwd")], "absolute target"),
    "char_device": ([(zip_special("game/null", stat.S_IFCHR | 0o666), b"")], "device file"),
    "fifo": ([(zip_special("game/pipe", stat.S_IFIFO | 0o666), b"")], "named pipe"),
    "duplicate": ([("game/a.gd", b"x"), ("game/a.gd", b"y")], "twice"),
    "file_then_dir": ([("game/a", b"x"), ("game/a/b.gd", b"y")], "not a folder"),
}


@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")  # zipfile warns while the test builds the attack
@pytest.mark.parametrize("case", sorted(ATTACKS_ZIP))
def test_zip_attacks_are_refused(tmp_path: Path, work, case):
    src, dest = work
    members, error = ATTACKS_ZIP[case]
    archive = make_zip(src / f"{case}.zip", [("game/project.godot", PROJECT), *members])
    with pytest.raises(ArchiveError, match=error):
        extract_archive(archive, dest, LIMITS, max_file_bytes=MB)
    assert_nothing_outside(tmp_path, archive)
    assert not Path("/tmp/godot_rag_evil.gd").exists()


ATTACKS_TAR = {
    "absolute": ([tar_member("/tmp/godot_rag_evil.gd", b"x")], "absolute path"),
    "dotdot": ([tar_member("game/../../evil.gd", b"x")], "'..'"),
    "symlink_out": ([tar_member("game/link", type=tarfile.SYMTYPE, linkname="../../..")], "leads outside"),
    "symlink_abs": ([tar_member("game/link", type=tarfile.SYMTYPE, linkname="/etc")], "absolute target"),
    # The classic two-step: a link that escapes, then a file written "through" it.
    "symlink_then_write": (
        [tar_member("game/esc", type=tarfile.SYMTYPE, linkname="../.."), tar_member("game/esc/evil.gd", b"x")],
        "leads outside",
    ),
    "hardlink_out": ([tar_member("game/pw", type=tarfile.LNKTYPE, linkname="../../etc/passwd")], "'..'"),
    "hardlink_abs": ([tar_member("game/pw", type=tarfile.LNKTYPE, linkname="/etc/passwd")], "absolute path"),
    "hardlink_missing": ([tar_member("game/pw", type=tarfile.LNKTYPE, linkname="game/nothing.gd")], "not a file of the archive"),
    "char_device": ([tar_member("game/null", type=tarfile.CHRTYPE)], "device file"),
    "block_device": ([tar_member("game/sda", type=tarfile.BLKTYPE)], "device file"),
    "fifo": ([tar_member("game/pipe", type=tarfile.FIFOTYPE)], "named pipe"),
    "duplicate": ([tar_member("game/a.gd", b"x"), tar_member("game/a.gd", b"y")], "twice"),
}


@pytest.mark.parametrize("case", sorted(ATTACKS_TAR))
def test_tar_attacks_are_refused(tmp_path: Path, work, case):
    src, dest = work
    members, error = ATTACKS_TAR[case]
    archive = make_tar(src / f"{case}.tar.gz", [tar_member("game/project.godot", PROJECT), *members])
    with pytest.raises(ArchiveError, match=error):
        extract_archive(archive, dest, LIMITS, max_file_bytes=MB)
    assert_nothing_outside(tmp_path, archive)
    assert not Path("/tmp/godot_rag_evil.gd").exists()


def test_zip_bomb_by_ratio_is_refused_before_inflating(tmp_path: Path, work):
    src, dest = work
    archive = make_zip(src / "bomb.zip", [("game/project.godot", PROJECT), ("game/zeros.tres", bytes(8 * MB))])
    assert archive.stat().st_size < 50_000
    with pytest.raises(ArchiveError, match="archive bomb: entry 'game/zeros.tres' inflates"):
        extract_archive(archive, dest, LIMITS, max_file_bytes=16 * MB)
    assert everything_under(dest) <= {"game", "game/project.godot"}


def test_zip_bomb_by_total_size_is_refused(tmp_path: Path, work):
    src, dest = work
    members = [(f"game/part{i}.bin", os.urandom(MB)) for i in range(3)]
    archive = make_zip(src / "big.zip", members)
    small = ArchiveLimits(max_total_bytes=2 * MB, max_ratio=100, max_entries=100)
    with pytest.raises(ArchiveError, match="archive bomb: entries declare"):
        extract_archive(archive, dest, small, max_file_bytes=4 * MB)
    assert everything_under(dest) == set()


def test_zip_that_lies_about_its_sizes_is_refused(tmp_path: Path, work):
    """Headers claim 100 bytes; the data inflates to 2 MiB. The real byte count decides."""
    src, dest = work
    archive = make_zip(src / "liar.zip", [("game/a.tres", bytes(2 * MB))])
    raw = bytearray(archive.read_bytes())
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    raw[local + 22 : local + 26] = (100).to_bytes(4, "little")
    raw[central + 24 : central + 28] = (100).to_bytes(4, "little")
    archive.write_bytes(bytes(raw))
    with pytest.raises(ArchiveError, match="damaged zip|declared size"):
        extract_archive(archive, dest, LIMITS, max_file_bytes=MB)


def test_gzip_bomb_in_a_tar_is_stopped_while_streaming(tmp_path: Path, work):
    src, dest = work
    archive = src / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        info = tarfile.TarInfo("game/zeros.tres")
        info.size = 200 * MB
        tf.addfile(info, Zeros(info.size))
    assert archive.stat().st_size < 400_000
    with pytest.raises(ArchiveError, match="archive bomb"):
        extract_archive(archive, dest, LIMITS, max_file_bytes=512 * MB)
    written = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    assert written < 64 * MB


def test_too_many_entries_is_refused(tmp_path: Path, work):
    src, dest = work
    few = ArchiveLimits(max_total_bytes=MB, max_ratio=100, max_entries=10)
    z = make_zip(src / "many.zip", [(f"f{i}.gd", b"x") for i in range(11)])
    with pytest.raises(ArchiveError, match="entries"):
        extract_archive(z, dest, few, max_file_bytes=MB)
    t = make_tar(src / "many.tar.gz", [tar_member(f"f{i}.gd", b"x") for i in range(11)])
    with pytest.raises(ArchiveError, match="more than 10 entries"):
        extract_archive(t, dest, few, max_file_bytes=MB)


def test_not_an_archive_and_a_damaged_one_are_clear_errors(work):
    src, dest = work
    junk = src / "junk.zip"
    junk.write_bytes(b"definitely not a zip")
    with pytest.raises(ArchiveError, match="not a zip or tar archive"):
        extract_archive(junk, dest, LIMITS, max_file_bytes=MB)
    cut = src / "cut.tar.gz"
    full = make_tar(src / "full.tar.gz", [tar_member("a.gd", os.urandom(50_000))]).read_bytes()
    cut.write_bytes(full[: len(full) // 2])
    with pytest.raises(ArchiveError, match="damaged"):
        extract_archive(cut, dest, LIMITS, max_file_bytes=MB)


# ---------------------------------------------------------------- good archives


def good_members() -> list[tuple]:
    return [
        tar_member("game/project.godot", PROJECT),
        tar_member("game/player.gd", SCRIPT),
        tar_member("game/alias.gd", type=tarfile.SYMTYPE, linkname="player.gd"),
        tar_member("game/copy.gd", type=tarfile.LNKTYPE, linkname="game/player.gd"),
        tar_member("game/big.tres", b"[gd_resource format=3]\n" + b"; pad\n" * 400),
        tar_member("game/icon.png", b"\x89PNG\r\n\x1a\n" + bytes(64)),
        tar_member("game/README.md", b"# Boxed\n"),
    ]


def test_a_good_tar_extracts_inside_and_hands_back_links_and_oversized_files(tmp_path: Path, work):
    src, dest = work
    archive = make_tar(src / "boxed.tar.gz", good_members())
    extra = {e.path: e for e in extract_archive(archive, dest, LIMITS, max_file_bytes=1000)}
    assert everything_under(dest) == {
        "game",
        "game/project.godot",
        "game/player.gd",
        "game/copy.gd",
        "game/icon.png",
        "game/README.md",
    }
    assert not any(p.is_symlink() for p in dest.rglob("*")), "links are never created on disk"
    assert (dest / "game" / "copy.gd").read_bytes() == SCRIPT
    assert extra["game/alias.gd"].link_target == "player.gd"
    assert extra["game/big.tres"].size > 1000 and extra["game/big.tres"].read is None
    assert_nothing_outside(tmp_path, archive)


@pytest.mark.parametrize("suffix", [".zip", ".tar.gz", ".tar", ".tar.xz"])
def test_collect_reads_an_archive_by_path_or_as_uploaded_bytes(tmp_path: Path, suffix):
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path / "data"), "GODOT_RAG_MAX_FILE_BYTES": "1000"})
    archive = tmp_path / f"boxed{suffix}"
    if suffix == ".zip":
        make_zip(
            archive,
            [
                ("game/project.godot", PROJECT),
                ("game/player.gd", SCRIPT),
                (zip_special("game/alias.gd", stat.S_IFLNK | 0o777), b"player.gd"),
                ("game/icon.png", b"\x89PNG\r\n\x1a\n" + bytes(64)),
                ("game/README.md", b"# Boxed\n"),
            ],
        )
    else:
        make_tar(archive, good_members(), mode={".tar.gz": "w:gz", ".tar": "w", ".tar.xz": "w:xz"}[suffix])
    for submission in (
        collect(path=str(archive), settings=settings, local_caller=True),
        collect(archive=archive.read_bytes(), archive_name=archive.name, settings=settings),
    ):
        assert submission.source_origin == "uploaded_file"
        assert [p.root for p in submission.projects] == ["game"]
        (project,) = submission.projects
        assert project.project_id == "archive:boxed/game"
        files = {f.source_file: f for f in project.files}
        assert files["player.gd"].included and files["player.gd"].data == SCRIPT
        assert files["project.godot"].source_kind == "project_config"
        assert "not followed" in files["alias.gd"].excluded_reason
        assert files["icon.png"].excluded_reason == REASON_BINARY
        if suffix != ".zip":
            assert files["copy.gd"].included
            assert files["big.tres"].excluded_reason.startswith("oversized: 2423 bytes")
    # The working folders are gone once the files are read.
    assert list((tmp_path / "data" / "work").iterdir()) == []


def test_collect_refuses_a_hostile_upload_and_leaves_no_working_folder(tmp_path: Path):
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path / "data")})
    archive = make_tar(tmp_path / "evil.tar.gz", [tar_member("game/../../../evil.gd", b"x")])
    with pytest.raises(IngestError, match="'..' leads outside"):
        collect(archive=archive.read_bytes(), archive_name="evil.tar.gz", settings=settings)
    assert list((tmp_path / "data" / "work").iterdir()) == []
    assert not (tmp_path / "evil.gd").exists() and not (tmp_path / "data" / "evil.gd").exists()


def test_the_writer_never_writes_through_a_link_even_one_it_did_not_make(tmp_path: Path, work):
    """Defence in depth: if a link appeared inside the working folder, writes refuse to pass through it."""
    from godot_rag.infra.fetch import SafeTree

    _, dest = work
    outside = tmp_path / "outside"
    outside.mkdir()
    (dest / "game").symlink_to(outside)
    (dest / "file.gd").symlink_to(outside / "target.gd")
    with SafeTree(dest, Budget(LIMITS, None)) as tree:
        with pytest.raises(ArchiveError, match="passes through 'game'"):
            tree.write("game/x.gd", [b"x"])
        with pytest.raises(ArchiveError, match="twice"):
            tree.write("file.gd", [b"x"])
        with pytest.raises(ArchiveError, match="cannot be written"):
            tree.write("n" * 300 + ".gd", [b"x"])
    assert list(outside.iterdir()) == []
