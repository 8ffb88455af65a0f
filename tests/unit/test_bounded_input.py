"""Bounded input: sparse archives, folder walks, prompts, per-client submissions, search limits."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from godot_rag.domain.ingest.archive import ArchiveError, ArchiveLimits
from godot_rag.domain.ingest.policy import IngestError, WalkLimits, walk_folder
from godot_rag.errors import InvalidInputError, OverloadedError
from godot_rag.infra.fetch import extract_archive
from godot_rag.pipeline.retrieval import search_limit
from godot_rag.pipeline.submit import ClientLimiter, check_prompt, client_of_peer
from godot_rag.settings import SettingsError, load_settings

MB = 1024 * 1024


def sparse_member(name: str, real_size: int, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    """A GNU sparse 1.0 (PAX) member: ``data`` at offset 0, then a hole up to ``real_size``.

    What the archive carries is a 512-byte map and the data; what an extractor
    writes is ``real_size`` bytes, the hole as zeros.
    """
    sparse_map = f"2\n0\n{len(data)}\n{real_size}\n0\n".encode().ljust(512, b"\0")
    payload = sparse_map + data
    info = tarfile.TarInfo(f"GNUSparseFile.0/{name}")
    info.size = len(payload)
    info.pax_headers = {
        "GNU.sparse.major": "1",
        "GNU.sparse.minor": "0",
        "GNU.sparse.name": name,
        "GNU.sparse.realsize": str(real_size),
    }
    return info, payload


def sparse_tar(path: Path, members: int, real_size: int) -> None:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for i in range(members):
            info, payload = sparse_member(f"game/level{i}.tscn", real_size, b"[gd_scene format=2]\n")
            tf.addfile(info, io.BytesIO(payload))


def test_the_crafted_archive_really_is_sparse(tmp_path: Path):
    archive = tmp_path / "one.tar.gz"
    sparse_tar(archive, 1, 3 * 1024)
    with tarfile.open(archive, "r|gz") as tf:
        for member in tf:
            assert member.issparse() and member.size == 3 * 1024 and member.name == "game/level0.tscn"
            extracted = tf.extractfile(member)
            assert extracted is not None and len(extracted.read()) == 3 * 1024


def test_sparse_members_are_charged_the_bytes_they_write(tmp_path: Path):
    # 40 members of 1.9 MB each (under the per-file limit), about 1 KB of archive for all: 76 MB on disk
    # if the extractor counted only the stream. The ratio and total limits see the written bytes.
    archive = tmp_path / "sparse.tar.gz"
    sparse_tar(archive, 40, 1_900_000)
    assert archive.stat().st_size < 16 * 1024
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(ArchiveError, match="archive bomb"):
        extract_archive(
            archive, dest, ArchiveLimits(max_total_bytes=512 * MB, max_ratio=100, max_entries=1000), max_file_bytes=2 * MB
        )
    written = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    assert written <= 2 * MB + 2_000_000  # stopped within one member of the ratio floor
    # The same archive under a total limit alone (no ratio) stops at the total.
    dest2 = tmp_path / "out2"
    dest2.mkdir()
    with pytest.raises(ArchiveError, match="limit of 5000000 bytes"):
        extract_archive(
            archive, dest2, ArchiveLimits(max_total_bytes=5_000_000, max_ratio=1e12, max_entries=1000), max_file_bytes=2 * MB
        )


def test_folder_walks_are_bounded_in_entries_and_bytes(tmp_path: Path):
    for i in range(30):
        (tmp_path / f"s{i}.gd").write_text("extends Node\n" * 100)
    (tmp_path / "big.png").write_bytes(b"\0" * 100_000)  # decided by its path: never read, not counted
    assert len(walk_folder(tmp_path, WalkLimits(max_entries=100, max_bytes=100_000))) == 31
    with pytest.raises(IngestError, match="more than 10 entries"):
        walk_folder(tmp_path, WalkLimits(max_entries=10, max_bytes=10 * MB))
    with pytest.raises(IngestError, match="limit of 10000 bytes"):
        walk_folder(tmp_path, WalkLimits(max_entries=1000, max_bytes=10_000))


def test_prompts_are_bounded_in_utf8_bytes(tmp_path: Path):
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_MAX_PROMPT_BYTES": "100"})
    assert check_prompt("é" * 50, settings) == "é" * 50
    with pytest.raises(InvalidInputError, match="101 bytes, over the limit of 100"):
        check_prompt("é" * 50 + "x", settings)
    with pytest.raises(InvalidInputError, match="required"):
        check_prompt("  ", settings)
    default = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path)})
    with pytest.raises(InvalidInputError):
        check_prompt("x" * (1024 * 1024 + 1), default)  # over NATS's 1 MB payload: refused up front


def test_each_client_runs_a_bounded_number_of_submissions():
    limiter = ClientLimiter(2)
    with limiter.slot("10.0.0.1"), limiter.slot("10.0.0.1"):
        with pytest.raises(OverloadedError, match="10.0.0.1 already has 2"):
            with limiter.slot("10.0.0.1"):
                pass
        with limiter.slot("10.0.0.2"):  # another client is not held back
            pass
    with limiter.slot("10.0.0.1"):  # slots come back when submissions end (also on errors)
        pass
    with pytest.raises(ValueError), limiter.slot("10.0.0.3"):
        raise ValueError("collect failed")
    assert limiter.running == {}


def test_grpc_peers_name_the_client_and_whether_it_is_local():
    assert client_of_peer("ipv4:127.0.0.1:53422") == ("127.0.0.1", True)
    assert client_of_peer("ipv6:[::1]:53422") == ("::1", True)
    assert client_of_peer("ipv4:10.1.2.3:1") == ("10.1.2.3", False)
    assert client_of_peer("ipv6:[2001:db8::1]:443") == ("2001:db8::1", False)
    assert client_of_peer("unix:/tmp/s") == ("unix", True)
    assert client_of_peer("") == ("", False)


def test_search_limits_are_capped(tmp_path: Path):
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_RETRIEVAL_MAX_LIMIT_PER_TABLE": "20"})
    assert search_limit(0, settings) == settings.retrieval_limit_per_table
    assert search_limit(7, settings) == 7
    assert search_limit(10_000_000, settings) == 20
    assert search_limit(-5, settings) == settings.retrieval_limit_per_table


def test_limits_must_be_positive(tmp_path: Path):
    for name in ("MAX_PROMPT_BYTES", "GRPC_MAX_MESSAGE_BYTES", "MAX_SUBMISSIONS_PER_CLIENT", "WALK_MAX_ENTRIES"):
        with pytest.raises(SettingsError, match=name):
            load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), f"GODOT_RAG_{name}": "0"})


async def test_rules_judging_leaves_the_event_loop_free():
    """A large chunk is judged in a worker thread: the loop that acks progress and answers health checks keeps turning."""
    import asyncio

    from godot_rag.domain.chunking.gdscript import parse_gdscript
    from godot_rag.domain.judging.backends import RulesBackend
    from godot_rag.domain.judging.rules import RenameIndex, shipped_vocabulary
    from godot_rag.domain.models import JudgmentRequest

    source = "extends Node\nfunc f():\n" + "\tvar v = a.b(c, d) + e.f(g[1], h)\n" * 4000
    chunk = next(c for c in parse_gdscript("a.gd", source.encode()).chunks if c.chunk_kind == "function")
    backend = RulesBackend(RenameIndex.from_payloads([], shipped_vocabulary()))
    request = JudgmentRequest(prompt="Godot 3 or 4?", chunk=chunk, evidence=(), source_kind="gdscript")
    ticks = 0
    judged = asyncio.create_task(backend.judge(request))
    while not judged.done():
        ticks += 1
        await asyncio.sleep(0)
    judgment = await judged
    assert judgment.status == "ok" and judgment.signal == "neutral"
    # On the loop itself the judgment would finish before the loop turned once more.
    assert ticks > 10


def test_search_keys_of_a_crafted_identifier_chain_stay_within_postgres_word_limit():
    from godot_rag.domain.retrieval.knowledge import MAX_LEXEME_CHARS, identifier_lexemes

    # A 100 KB member chain once became one tsquery word, which PostgreSQL refuses ("word is too long").
    lexemes = identifier_lexemes("x = " + "a." * 50_000 + "b\n" + "Node2D.get_position()")
    assert max(len(lex) for lex in lexemes) <= MAX_LEXEME_CHARS
    assert {"a.b", "node2d.get_position", "get_position"} <= set(lexemes)  # the parts and tail pair stay
