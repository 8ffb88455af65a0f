"""Replay, result versions, diff and the classified export on the real stack.

The analyses here use their own prompt, so their ids differ from the other
integration tests' analyses of the same samples (a replay changes the current
version of the analysis it replays).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from html import escape as html_escape
from urllib.parse import urlencode

import nats
import pytest

from godot_rag import cli
from godot_rag.domain.ids import subject_token
from godot_rag.pipeline.export import project_slug
from godot_rag.stages import STREAM_CHUNKS, chunk_subject
from godot_rag.v1 import services_pb2 as spb

PROMPT = "Replay check: is this project Godot 3 or Godot 4, and what would converting it take?"


def analyse(stack, path: str, timeout_s: float = 300) -> spb.AnalysisResult:
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=PROMPT, path=path), timeout=120)
    last = None
    for progress in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=timeout_s):
        last = progress
    assert last is not None and last.status == "done", last
    return stack.gateway.Get(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=60)


def replay(stack, timeout_s: float = 300, **fields) -> spb.ReplayResponse:
    started = stack.gateway.Replay(spb.ReplayRequest(**fields), timeout=120)
    deadline = time.monotonic() + timeout_s
    state = started
    while state.status == "running":
        assert time.monotonic() < deadline, f"replay {started.replay_id} did not finish"
        time.sleep(0.3)
        state = stack.gateway.GetReplay(spb.GetReplayRequest(replay_id=started.replay_id), timeout=30)
    assert state.status == "done", state
    return started


def traces(stack, result) -> dict[str, spb.ChunkTraceDetail]:
    return {
        c.trace.chunk_id: stack.gateway.GetChunkTrace(
            spb.ChunkTraceRequest(analysis_id=result.analysis_id, chunk_id=c.trace.chunk_id), timeout=30
        )
        for c in result.chunks
    }


def version_view(detail: spb.ChunkTraceDetail, version_id: str, bases: dict[str, str]):
    """(signal, needs_migration, hit ids in order, notes) of a chunk in a version, read from the chunk trace."""
    hits = {r.version_id: [(h.table, h.record_id) for h in r.hits] for r in detail.retrievals}
    by_version = {j.version_id: j for j in detail.judgments}
    v = version_id
    while v and v not in by_version:
        v = bases.get(v, "")
    j = by_version[v]
    return (
        j.judgment.signal,
        j.judgment.needs_migration,
        hits[j.retrieval_version],
        sorted((n.line, n.old, n.new, n.basis_record_id) for n in j.judgment.migration_notes),
    )


def expected_changes(details, a: str, b: str, bases: dict[str, str]) -> set[str]:
    return {cid for cid, d in details.items() if version_view(d, a, bases) != version_view(d, b, bases)}


def versions(stack, aid: str) -> spb.VersionsResponse:
    return stack.gateway.ListVersions(spb.GetRequest(analysis_id=aid), timeout=30)


def count_rows(stack, aid: str) -> tuple[int, int, int]:
    row = stack.sql(
        "select (select count(*) from godot_rag.judgment_versions where analysis_id = %(a)s) as j, "
        "(select count(*) from godot_rag.retrieval_versions where analysis_id = %(a)s) as r, "
        "(select count(*) from godot_rag.result_versions where analysis_id = %(a)s) as v",
        {"a": aid},
    )[0]
    return row["j"], row["r"], row["v"]


@pytest.fixture(autouse=True)
def cli_uses_this_stack(stack, monkeypatch):
    # The CLI finds its gateway here, never in the default data folder.
    monkeypatch.setenv("GODOT_RAG_GATEWAY_ADDR", stack.runtime["gateway"])


@pytest.fixture(scope="module")
def godot3(stack, repo):
    return analyse(stack, str(repo / "samples" / "godot3_project"))


@pytest.fixture(scope="module")
def godot4(stack, repo):
    return analyse(stack, str(repo / "samples" / "godot4_project"))


def test_analysis_records_its_versions_and_verdict(stack, godot3):
    listed = versions(stack, godot3.analysis_id)
    judge = [v for v in listed.versions if v.stage == "judge"]
    retrieve = [v for v in listed.versions if v.stage == "retrieve"]
    assert len(judge) == 1 and len(retrieve) == 1, listed
    assert judge[0].current and judge[0].version_id == listed.current_judgment_version
    assert json.loads(judge[0].config_json)["judge_kind"] == "rules"
    assert json.loads(retrieve[0].config_json)["limit_per_table"] == 5
    assert judge[0].verdict.label == godot3.verdict.label == "godot3"
    verdict = stack.gateway.GetVerdict(spb.VerdictVersionRequest(analysis_id=godot3.analysis_id), timeout=30)
    assert verdict.current and verdict.version_id == judge[0].version_id and verdict.verdict == godot3.verdict


def test_replay_one_chunk_then_a_whole_stage_keeps_versions_and_the_diff_shows_what_changed(stack, godot3, tmp_path):
    aid = godot3.analysis_id
    original = versions(stack, aid).current_judgment_version
    before = traces(stack, godot3)
    # A chunk with several hits in one table: a search keeping one hit per table changes its candidates.
    chunk = next(cid for cid, d in before.items() if len({h.table for h in d.hits}) < len(d.hits))

    # One chunk, retrieval with one hit per table (and the judge after it).
    first = replay(stack, analysis_id=aid, stage="retrieve", chunk_ids=[chunk], limit_per_table=1)
    assert [(c.chunk_id, c.source, c.published) for c in first.chunks] == [(chunk, "stream", True)]
    listed = versions(stack, aid)
    one_chunk_version = listed.current_judgment_version
    assert one_chunk_version != original
    bases = {v.version_id: v.base_version for v in listed.versions if v.stage == "judge"}
    assert bases[one_chunk_version] == original
    after = traces(stack, godot3)
    assert len(after[chunk].judgments) == 2 and len(after[chunk].retrievals) == 2
    assert all(len(d.judgments) == 1 for cid, d in after.items() if cid != chunk)
    assert len(after[chunk].hits) == len({h.table for h in after[chunk].hits})  # the current view is the replay's
    assert any(a.replay_id == first.replay_id and a.source == "stream" for a in after[chunk].attempts)

    diff = json.loads(stack.gateway.Diff(spb.DiffRequest(analysis_id=aid, a=original, b=one_chunk_version), timeout=60).json)
    assert {c["chunk_id"] for c in diff["chunks"] if c["changed"]} == expected_changes(after, original, one_chunk_version, bases)
    assert {c["chunk_id"] for c in diff["chunks"] if c["changed"]} == {chunk}
    assert diff["summary"]["candidates_removed"] > 0 and diff["summary"]["chunks_compared"] == len(godot3.chunks)

    # The whole retrieve stage with two hits per table: every chunk gets a new version.
    whole = replay(stack, analysis_id=aid, stage="retrieve", limit_per_table=2)
    assert len(whole.chunks) == len(godot3.chunks) and all(c.published for c in whole.chunks)
    listed = versions(stack, aid)
    stage_version = listed.current_judgment_version
    assert stage_version not in (original, one_chunk_version)
    bases = {v.version_id: v.base_version for v in listed.versions if v.stage == "judge"}
    after = traces(stack, godot3)
    changed = expected_changes(after, original, stage_version, bases)
    assert changed, "two hits per table instead of five changed no chunk"
    diff_path = tmp_path / "diff.json"
    assert cli.main(["diff", "--analysis", aid, original, stage_version, "--json", str(diff_path)]) == 0
    doc = json.loads(diff_path.read_text())
    assert {c["chunk_id"] for c in doc["chunks"] if c["changed"]} == changed
    assert doc["summary"]["chunks_changed"] == len(changed)
    stored = stack.gateway.GetVerdict(spb.VerdictVersionRequest(analysis_id=aid, version_id=stage_version), timeout=30)
    assert stored.current and doc["verdict"]["b"] == stored.verdict.label
    assert (
        stack.gateway.GetVerdict(spb.VerdictVersionRequest(analysis_id=aid, version_id=original), timeout=30).verdict
        == godot3.verdict
    )

    # The same replay again: nothing republished, no new version.
    rows = count_rows(stack, aid)
    again = stack.gateway.Replay(spb.ReplayRequest(analysis_id=aid, stage="retrieve", limit_per_table=2), timeout=120)
    assert again.replay_id == whole.replay_id and again.status == "done"
    assert not any(c.published for c in again.chunks)
    assert count_rows(stack, aid) == rows


def test_replay_rebuilds_an_aged_out_message_from_the_store_and_the_same_settings_make_one_version(stack, godot3):
    aid = godot3.analysis_id
    chunk = godot3.chunks[0].trace.chunk_id
    subject = chunk_subject("judge", aid, subject_token(chunk))

    async def purge() -> None:
        nc = await nats.connect(stack.runtime["nats_url"])
        try:
            await nc.jetstream().purge_stream(STREAM_CHUNKS, subject=subject)
        finally:
            await nc.close()

    asyncio.run(purge())  # what the stream's retention does once the message is older than max_age
    current = versions(stack, aid).current_judgment_version
    rows = count_rows(stack, aid)
    assert cli.main(["replay", aid, "--stage", "judge", "--chunk", chunk, "--judge", "rules"]) == 0
    replays = stack.sql(
        "select r.replay_id, rc.source from godot_rag.replays r join godot_rag.replay_chunks rc "
        "on rc.replay_id = r.replay_id where r.analysis_id = %s and r.from_stage = 'judge' "
        "and rc.stage = 'judge'",
        (aid,),
    )
    assert [r["source"] for r in replays] == ["store"]
    # The stack's own judge over the current retrieval is the current version: nothing new is written.
    assert versions(stack, aid).current_judgment_version == current
    assert count_rows(stack, aid) == rows
    assert cli.main(["replay", aid, "--stage", "judge", "--chunk", chunk, "--judge", "rules"]) == 0
    assert count_rows(stack, aid) == rows


def test_export_of_two_analyses_writes_the_documented_tree(stack, godot3, godot4, tmp_path):
    out = tmp_path / "export"
    assert cli.main(["export", godot3.analysis_id, godot4.analysis_id, "--out", str(out)]) == 0
    results = [stack.gateway.Get(spb.GetRequest(analysis_id=a.analysis_id), timeout=60) for a in (godot3, godot4)]
    expected_files = {"dataset.jsonl"}
    for r in results:
        for name in ("verdict.json", "chunks.jsonl", "report.md"):
            expected_files.add(f"{r.verdict.label}/{project_slug(r.project_id)}/{name}")
    assert {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} == expected_files
    assert {r.verdict.label for r in results} == {"godot3", "godot4"}

    dataset = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    for r in results:
        folder = out / r.verdict.label / project_slug(r.project_id)
        details = traces(stack, r)
        verdict = json.loads((folder / "verdict.json").read_text())
        assert verdict["analysis_id"] == r.analysis_id and verdict["status"] == r.status
        assert verdict["verdict"] == {
            "label": r.verdict.label,
            "confidence": r.verdict.confidence,
            "counts": dict(sorted(r.verdict.counts.items())),
            "basis": list(r.verdict.basis),
        }
        assert verdict["files"]["excluded"] == sum(1 for f in r.files if f.status == "excluded")

        lines = [json.loads(line) for line in (folder / "chunks.jsonl").read_text().splitlines()]
        assert [c["trace"]["chunk_id"] for c in lines] == [c.trace.chunk_id for c in r.chunks]
        for line, chunk in zip(lines, r.chunks):
            d = details[chunk.trace.chunk_id]
            assert [(h["table"], h["record_id"], h["score"]) for h in line["hits"]] == [
                (h.table, h.record_id, h.score) for h in d.hits
            ]
            assert line["query"]["query_text"] == d.query.query_text and line["trace_id"] == d.trace_id
            assert line["judgment"]["signal"] == chunk.judgment.signal
            assert line["judgment"]["model"] == chunk.judgment.model and line["judgment"]["judge"] == "rules"
            assert line["notes"] == [
                {"line": n.line, "old": n.old, "new": n.new, "basis_record_id": n.basis_record_id}
                for n in chunk.judgment.migration_notes
            ]
            assert len(line["judgment_versions"]) == len(d.judgments)

        report = (folder / "report.md").read_text()
        assert f"- verdict: **{r.verdict.label}**" in report
        for basis in r.verdict.basis:
            assert f"- {basis}" in report
        for chunk in r.chunks:
            for n in chunk.judgment.migration_notes:
                assert f"- line {n.line}: `{n.old}` -> `{n.new}`" in report
        excluded = [f for f in r.files if f.status == "excluded"]
        assert excluded, "the samples hold excluded files (README, icon)"
        for f in excluded:
            assert f"- `{f.source_file}`: {f.excluded_reason}" in report

        mine = [rec for rec in dataset if rec["analysis_id"] == r.analysis_id]
        judged = [rec for rec in mine if rec["record_type"] == "judgment"]
        assert sorted(rec["chunk_id"] for rec in judged) == sorted(c.trace.chunk_id for c in r.chunks if c.judgment.signal)
        for rec in judged:
            d = details[rec["chunk_id"]]
            assert rec["prompt"] == r.prompt and rec["chunk_text"] == d.text and rec["judge"] == "rules"
            assert rec["prompt_version"] == "" and rec["model"] and rec["judgment"]["signal"]
            assert [(e["table"], e["record_id"]) for e in rec["evidence"]] == [(h.table, h.record_id) for h in d.hits]
        expected_pairs = 0
        for d in details.values():
            ok = [v for v in d.judgments if v.judgment.signal]
            chosen = next(v for v in ok if v.current)
            expected_pairs += sum(
                1
                for v in ok
                if v.version_id != chosen.version_id
                and (v.judgment.signal, v.judgment.needs_migration) != (chosen.judgment.signal, chosen.judgment.needs_migration)
            )
        pairs = [rec for rec in mine if rec["record_type"] == "preference"]
        assert len(pairs) == expected_pairs
        for rec in pairs:
            assert (
                rec["chosen"]["judgment"]["signal"] != rec["rejected"]["judgment"]["signal"]
                or rec["chosen"]["judgment"]["needs_migration"] != rec["rejected"]["judgment"]["needs_migration"]
            )


def test_the_api_example_runs(stack, repo, tmp_path):
    text = (repo / "docs" / "api.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert "godot_rag.v1" in example and "import godot_rag." not in example.replace("from godot_rag.v1", "")
    script = tmp_path / "example.py"
    script.write_text(example)
    env = {**os.environ, "GODOT_RAG_GATEWAY_ADDR": stack.runtime["gateway"]}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("analysis ") and ": done," in lines[0]
    assert lines[-1].startswith("verdict godot3 ")
    assert any("KinematicBody2D -> CharacterBody2D" in line for line in lines), done.stdout
    assert any(line.strip().startswith("judge: done") for line in lines), done.stdout


def test_web_diff_endpoint_page_and_replay_button_use_the_same_functions(stack, godot3):
    aid = godot3.analysis_id
    listed = versions(stack, aid)
    judge = [v.version_id for v in listed.versions if v.stage == "judge"]
    assert len(judge) >= 2, "run after the replay test"
    a, b = judge[0], listed.current_judgment_version
    web = stack.runtime["web"]
    with urllib.request.urlopen(f"{web}api/diff?{urlencode({'analysis': aid, 'a': a, 'b': b})}") as r:
        api_doc = json.loads(r.read())
    assert api_doc == json.loads(stack.gateway.Diff(spb.DiffRequest(analysis_id=aid, a=a, b=b), timeout=60).json)
    changed = {c["chunk_id"] for c in api_doc["chunks"] if c["changed"]}
    with urllib.request.urlopen(f"{web}diff?{urlencode({'analysis': aid, 'a': a, 'b': b, 'changed': '1'})}") as r:
        html = r.read().decode()
    shown = set(re.findall(r'<tr data-chunk="([^"]+)" data-changed="yes">', html.replace("&#34;", '"')))
    assert shown == {html_escape(c) for c in changed} and 'data-changed="no"' not in html
    assert f'data-version="{b}"' in html
    with urllib.request.urlopen(f"{web}a/{aid}") as r:
        assert f'data-field="current-version">{b}<' in r.read().decode()

    # The replay button posts JSON to the API, which runs the same replay as the RPC: the whole-stage replay
    # of the earlier test already did this chunk, so nothing is published again.
    chunk = godot3.chunks[0].trace.chunk_id
    body = json.dumps({"stage": "retrieve", "chunk_ids": [chunk], "limit_per_table": 2}).encode()
    request = urllib.request.Request(
        f"{web}api/analyses/{aid}/replay", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as r:
        started = json.loads(r.read())
    same = stack.gateway.Replay(
        spb.ReplayRequest(analysis_id=aid, stage="retrieve", chunk_ids=[chunk], limit_per_table=2), timeout=60
    )
    assert started["replay_id"] == same.replay_id and started["chunks"] == [{"chunk_id": chunk, "source": "", "published": False}]
