"""The web screen's view shaping (pure) and its request checks."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from godot_rag.infra.rows import FileRow, FileVersionRow, WebChunkRow, WebTiming
from godot_rag.pipeline import web_views as wv
from godot_rag.pipeline.web_requests import (
    Refusal,
    access_refusal,
    allowed_host_names,
    answers_json,
    check_request,
    export_download,
    split_host,
    submit_form_values,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _row(chunk_id="player.gd:function:_process", start=12, end=26, stages=None, **kw) -> WebChunkRow:
    fields = {
        "chunk_id": chunk_id,
        "source_file": "player.gd",
        "chunk_order": 5,
        "chunk_kind": "function",
        "start_line": start,
        "end_line": end,
        "name": "_process",
        "source_kind": "gdscript",
        "file_order": 1,
        "stages": stages or {},
        "changed_at": None,
        "signal": None,
        "needs_migration": None,
        "confidence": None,
        "judgment_status": None,
        "migration_notes": [],
    }
    return WebChunkRow.from_row(fields | kw)


def _timing(**kw) -> WebTiming:
    return WebTiming.from_row(
        {"done": 0, "recent": 0, "first_done": None, "last_done": None, "now": T0, "created_at": None, "cursor": None} | kw
    )


def _file(source_file: str, source_kind: str, status: str, included: bool, **kw) -> FileRow:
    return FileRow.from_row(
        {
            "analysis_id": "a1",
            "source_file": source_file,
            "file_order": 1,
            "source_kind": source_kind,
            "included": included,
            "excluded_reason": "",
            "sha256": "",
            "size": 0,
            "status": status,
            "parse_status": "",
            "chunk_count": 0,
            "errors": [],
            "error": "",
            "chunks_reused": False,
            "updated_at": T0,
        }
        | kw
    )


DONE = {"retrieve": {"status": "done"}, "judge": {"status": "done"}, "aggregate": {"status": "done"}}


@pytest.mark.parametrize(
    "stages,running,line",
    [
        (DONE, True, "player.gd L12-L26 done"),
        ({"retrieve": {"status": "done"}, "judge": {"status": "in_progress"}}, False, "player.gd L12-L26 in progress, interrupted"),
        ({"retrieve": {"status": "done"}, "judge": {"status": "in_progress"}}, True, "player.gd L12-L26 in progress"),
        ({"retrieve": {"status": "waiting"}}, True, "player.gd L12-L26 waiting"),
        ({"retrieve": {"status": "failed", "last_error": "boom"}}, True, "player.gd L12-L26 failed"),
    ],
)
def test_chunk_line_in_the_design_form(stages, running, line):
    v = wv.chunk_view(_row(stages=stages), running)
    assert v["line"] == line
    assert v["range"] == "L12-L26"


def test_failed_judgment_carries_no_signal_and_no_migration():
    v = wv.chunk_view(_row(stages=DONE, signal="godot3", needs_migration=True, judgment_status="failed"), True)
    assert v["signal"] == "" and v["needs_migration"] is False


@pytest.mark.parametrize(
    "text,expected",
    [
        ("#L12-L26", (12, 26)),
        ("L12-26", (12, 26)),
        ("#L7", (7, 7)),
        ("L9-L3", None),
        ("#12-26", None),
        ("", None),
        ("#L1-L2<script>", None),
    ],
)
def test_parse_range(text, expected):
    assert wv.parse_range(text) == expected


def test_file_href_quotes_everything_but_slashes():
    assert wv.file_href("a1", "sub dir/<x>.gd", 1, 2) == "/a/a1/f/sub%20dir/%3Cx%3E.gd#L1-L2"
    assert wv.file_href("a/1", "pasted://snippet-ab.gd") == "/a/a%2F1/f/pasted%3A//snippet-ab.gd"


def test_filters_combine():
    views = [
        wv.chunk_view(_row("a:1", source_file="a.gd", stages=DONE, signal="godot3", needs_migration=True), False),
        wv.chunk_view(_row("b:1", source_file="b.gd", stages=DONE, signal="neutral"), False),
        wv.chunk_view(_row("b:2", source_file="b.gd", stages={"retrieve": {"status": "waiting"}}), True),
    ]

    def pick(**q):
        return [v["chunk_id"] for v in wv.filter_chunks(views, wv.ChunkFilter.from_query(q))]

    assert pick() == ["a:1", "b:1", "b:2"]
    assert pick(status="done") == ["a:1", "b:1"]
    assert pick(signal="none") == ["b:2"]
    assert pick(file="b.gd", status="done") == ["b:1"]
    assert pick(migration="yes") == ["a:1"]
    assert pick(migration="no", file="b.gd") == ["b:1", "b:2"]
    assert pick(status="bogus") == ["a:1", "b:1", "b:2"]  # unknown values filter nothing
    counts = wv.status_counts(views)
    assert (counts["total"], counts["done"], counts["waiting"], counts["godot3"], counts["needs_migration"]) == (3, 2, 1, 1, 1)


def test_progress_pace_and_time_left():
    counts = {"total": 100, "done": 40, "failed": 0}
    p = wv.progress_view(
        counts,
        _timing(recent=15, done=40, created_at=T0, last_done=T0 + timedelta(seconds=20), now=T0 + timedelta(seconds=21)),
        running=True,
        window_s=30,
    )
    assert p["throughput"] == "0.5 chunks/s" and p["eta"] == "2 min 00 s" and p["percent"] == 40
    p = wv.progress_view(counts, _timing(created_at=T0), running=True)
    assert p["eta"] == "not known yet" and p["throughput"] == "-"
    p = wv.progress_view(
        {"total": 10, "done": 10, "failed": 0}, _timing(done=10, created_at=T0, last_done=T0 + timedelta(seconds=5)), running=False
    )
    assert p["eta"] == "finished" and p["throughput"] == "2.0 chunks/s" and p["elapsed"] == "5 s"


def test_file_tree_nests_folders_and_keeps_excluded_apart():
    files = [
        _file("scripts/player.gd", "gdscript", "chunked", True, chunk_count=1),
        _file("scripts/ai/enemy.gd", "gdscript", "queued", True),
        _file("README.md", "markdown", "excluded", False, excluded_reason="documentation files are excluded by default"),
    ]
    views = [wv.chunk_view(_row("p:1", source_file="scripts/player.gd", stages=DONE, signal="godot3", needs_migration=True), False)]
    tree = wv.file_tree(files, views)
    scripts = tree["root"]["folders"][0]
    assert scripts["name"] == "scripts" and scripts["file_total"] == 2 and scripts["chunk_done"] == 1
    assert scripts["folders"][0]["files"][0]["name"] == "enemy.gd"
    assert [e["source_file"] for e in tree["excluded"]] == ["README.md"]
    assert wv.file_meta(tree["excluded"][0]) == "documentation files are excluded by default"
    assert wv.file_meta(scripts["files"][0]) == "1/1 chunks done, 1 Godot 3, 1 to migrate"


def test_signal_chart_weights_and_deciding_files():
    views = [
        wv.chunk_view(_row(f"f{i}:1", source_file=f"f{i}.gd", stages=DONE, signal="godot3", confidence=1.0), False)
        for i in range(7)
    ]
    views.append(
        wv.chunk_view(
            _row("cfg", source_file="project.godot", chunk_kind="config_version", stages=DONE, signal="godot4", confidence=0.9),
            False,
        )
    )
    kinds = {v["source_file"]: "gdscript" for v in views} | {"project.godot": "project_config"}
    chart = wv.signal_chart(views, kinds, deciding=5)
    by_file = {b["file"]: b for b in chart["bars"]}
    assert by_file["project.godot"]["w4"] == 4.5 and by_file["project.godot"]["w3"] == 0  # config_version weighs 5
    assert chart["bars"][0]["file"] == "project.godot"  # the heaviest first
    assert sum(b["deciding"] for b in chart["bars"]) == 6  # five per side at most, one Godot 4 file
    assert by_file["project.godot"]["len4"] > 0 and by_file["f0.gd"]["x3"] < chart["axis"]


def test_source_segments_cover_every_line_once():
    text = "extends Node\n\nfunc a():\n\tpass\n\n\nfunc b():\n\tpass\n"
    chunks = [{"start_line": 1, "end_line": 1}, {"start_line": 3, "end_line": 4}, {"start_line": 7, "end_line": 8}]
    segs = wv.source_segments(text, chunks)
    numbers = [n for s in segs for n, _ in s["lines"]]
    assert numbers == list(range(1, 9))
    assert [s["chunk"] is not None for s in segs] == [True, False, True, False, True]


def test_pick_chunk_exact_or_covering():
    chunks = [{"start_line": 1, "end_line": 10}, {"start_line": 12, "end_line": 26}]
    assert wv.pick_chunk(chunks, 12, 26) == (chunks[1], True)
    assert wv.pick_chunk(chunks, 14, 30) == (chunks[1], False)
    assert wv.pick_chunk(chunks, 11, 11) == (None, False)


def test_outdated_only_for_a_later_different_copy():
    versions = [FileVersionRow("new", T0 + timedelta(hours=1), "done", "bbb", True), FileVersionRow("old", T0, "done", "aaa", True)]
    assert wv.outdated_view("old", T0, "aaa", versions)["analysis_id"] == "new"
    assert wv.outdated_view("new", T0 + timedelta(hours=1), "bbb", versions) is None
    same = [FileVersionRow("new", T0 + timedelta(hours=1), "done", "aaa", True)] + versions[1:]
    assert wv.outdated_view("old", T0, "aaa", same) is None


HITS = [
    {
        "table": "api_mapping",
        "record_id": "r1",
        "title": "A",
        "score": 0.5,
        "component_scores": {"vector": 0.2, "keys": 1.0, "text": 0.5, "trigram": 0.1},
    },
    {
        "table": "api_mapping",
        "record_id": "r2",
        "title": "B",
        "score": 0.7,
        "component_scores": {"vector": 0.9, "keys": 0.5, "text": 1.0, "trigram": 0.3},
    },
    {
        "table": "docs_chunks",
        "record_id": "d1",
        "title": "C",
        "score": 0.4,
        "component_scores": {"keys": 1.0, "text": 1.0, "trigram": 0.0},
    },
]


def test_candidate_ranks_are_per_table_and_citations_marked():
    judgment = {
        "evidence": [{"record_id": "r2", "relevant": True}, {"record_id": "r1", "relevant": False}],
        "migration_notes": [{"line": 1, "old": "x", "new": "y", "basis_record_id": "d1"}],
    }
    rows = wv.candidate_rows(HITS, judgment)
    r1, r2, d1 = rows
    assert (r1["ranks"]["keys"], r2["ranks"]["keys"], d1["ranks"]["keys"]) == (1, 2, 1)
    assert (r1["ranks"]["vector"], r2["ranks"]["vector"]) == (2, 1) and "vector" not in d1["ranks"]
    assert (r1["ranks"]["fused"], r2["ranks"]["fused"]) == (2, 1)
    assert [r["cited"] for r in rows] == [False, True, False] and d1["basis"] is True
    assert [r["record_id"] for r in wv.sort_candidates(rows, "vector")] == ["r2", "r1", "d1"]  # no vector: last
    assert [r["record_id"] for r in wv.sort_candidates(rows, "vector", descending=False)] == ["r1", "r2", "d1"]
    assert [r["record_id"] for r in wv.sort_candidates(rows, "fused", descending=False)] == ["d1", "r1", "r2"]
    assert [r["record_id"] for r in wv.threshold_candidates(rows, 0.45)] == ["r1", "r2"]
    with pytest.raises(ValueError):
        wv.sort_candidates(rows, "nope")
    flat = wv.candidate_export(rows)
    assert flat[2]["vector"] is None and flat[1]["vector_rank"] == 1


def test_legend_names_every_score_column():
    assert [entry["key"] for entry in wv.SCORE_LEGEND] == list(wv.SCORE_KEYS) + ["fused"]
    assert all(entry["metric"] and entry["direction"] and entry["range"] for entry in wv.SCORE_LEGEND)


def test_csv_export_quotes_and_defuses_formulas():
    text = wv.to_csv(
        [{"source_file": "=cmd|' /C calc'!A0", "status": "done, really", "chunk_count": 3, "error": None}],
        ["source_file", "status", "chunk_count", "error"],
    )
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["source_file", "status", "chunk_count", "error"]
    assert rows[1] == ["'=cmd|' /C calc'!A0", "done, really", "3", ""]


# ---------------------------------------------------------------- request checks

ALLOWED = allowed_host_names("127.0.0.1")


@pytest.mark.parametrize(
    "method,headers,refused",
    [
        ("GET", {"Host": "127.0.0.1:8080"}, ""),
        ("GET", {"Host": "localhost:8080"}, ""),
        ("GET", {"Host": "[::1]:8080"}, ""),
        ("GET", {"Host": "evil.example:8080"}, "unexpected Host header"),  # DNS rebinding
        ("GET", {"Host": "127.0.0.1.evil.example"}, "unexpected Host header"),
        ("GET", {}, "unexpected Host header"),
        ("GET", {"Host": "127.0.0.1:8080", "Origin": "http://evil.example"}, "cross-origin request"),
        ("POST", {"Host": "127.0.0.1:8080", "Origin": "http://127.0.0.1:8080"}, ""),
        ("POST", {"Host": "127.0.0.1:8080", "Origin": "http://localhost:8080"}, "cross-origin request"),
        ("POST", {"Host": "127.0.0.1:8080", "Origin": "http://127.0.0.1:9999"}, "cross-origin request"),  # another local server
        ("POST", {"Host": "127.0.0.1:8080", "Origin": "null"}, "cross-origin request"),
        ("POST", {"Host": "127.0.0.1:8080", "Referer": "http://evil.example/x"}, "cross-origin request"),
        ("POST", {"Host": "127.0.0.1:8080", "Sec-Fetch-Site": "cross-site"}, "cross-origin request"),
        ("POST", {"Host": "127.0.0.1:8080"}, ""),  # a non-browser client (CLI, curl)
    ],
)
def test_host_and_origin_checks(method, headers, refused):
    assert check_request(method, headers, ALLOWED) == refused


def test_configured_host_is_allowed_and_wildcards_are_not():
    assert "gateway.internal" in allowed_host_names("gateway.internal")
    assert allowed_host_names("0.0.0.0") == allowed_host_names("")
    assert check_request("GET", {"Host": "gateway.internal"}, allowed_host_names("gateway.internal")) == ""
    assert split_host("[::1]x") is None and split_host("a:b:c") is None and split_host("h:80") == ("h", "80")


def test_patch_view_links_each_record_to_its_candidate_or_to_why_not_and_todos_to_their_chunk():
    from godot_rag.pipeline.patch import patch_project, patch_result_json

    text = (
        "extends KinematicBody2D\n\nvar v = Vector2()\n\n\nfunc _process(delta):\n\tv = move_and_slide(v, Vector2.UP)\n\tupdate()\n"
    )
    doc = patch_result_json(patch_project({"p.gd": text}))
    entry = next(e for e in doc["files"] if e["file"] == "p.gd")
    chunks = [
        {"chunk_id": "p.gd:class_extends:1", "start_line": 1, "end_line": 3, "range": "L1-L3", "candidate_ids": {}},
        {
            "chunk_id": "p.gd:function:_process",
            "start_line": 6,
            "end_line": 8,
            "range": "L6-L8",
            "candidate_ids": {"change:move-and-slide": 2},
        },
    ]
    view = wv.patch_view(entry, chunks, "a1", "p.gd")
    changes = {c["rule"]: c for h in view["hunks"] for c in h["changes"]}
    assert changes["move-and-slide"]["record_href"] == "#cand-L6-L8-2"  # the retriever found it for that chunk
    cls = next(c for c in changes.values() if c["record_id"].startswith("rename:class_renames:KinematicBody2D"))
    assert cls["record_href"] == ("/a/a1/f/p.gd?chunk=p.gd%3Aclass_extends%3A1&why=rename%3Aclass_renames%3AKinematicBody2D#L1-L3")
    assert changes["move-and-slide"]["receiver"].startswith("self (extends KinematicBody2D)")
    kinds = {ln["kind"] for h in view["hunks"] for ln in h["lines"]}
    assert {"head", "add", "del", "ctx"} <= kinds
    assert view["todos"] and all(t["chunk_range"] in ("L1-L3", "L6-L8") for t in view["todos"] if 1 <= t["line"] <= 8)
    # Nothing to change and nothing to do: no section.
    assert wv.patch_view({"hunks": [], "todos": [], "kept": [], "edits": 0, "changed": False}, chunks, "a1", "p.gd") is None
    assert wv.patch_view(None, chunks, "a1", "p.gd") is None


TOKEN = "a-long-random-test-token-0123456789"
LOCAL = {"Host": "127.0.0.1:8080"}


def test_access_refusal_checks_the_request_then_the_token_then_the_body_type():
    allowed = allowed_host_names("127.0.0.1")
    assert access_refusal("GET", "/", {"Host": "evil.example"}, "", allowed, TOKEN) == Refusal(
        403, "refused: unexpected Host header"
    )
    assert access_refusal("GET", "/", LOCAL, "", allowed, TOKEN) == Refusal(303, redirect="/login")
    assert access_refusal("GET", "/login", LOCAL, "", allowed, TOKEN) is None
    refused = access_refusal("GET", "/api/analyses", LOCAL, "", allowed, TOKEN)
    assert refused is not None and refused.status == 401 and refused.as_json
    assert access_refusal("GET", "/api/analyses", {**LOCAL, "Authorization": f"Bearer {TOKEN}"}, "", allowed, TOKEN) is None
    assert access_refusal("GET", "/", LOCAL, TOKEN, allowed, TOKEN) is None  # the sign-in cookie
    plain = access_refusal("POST", "/api/analyses", {**LOCAL, "Content-Type": "text/plain"}, TOKEN, allowed, TOKEN)
    assert plain is not None and plain.status == 415 and plain.as_json
    typed = {**LOCAL, "Content-Type": "application/json; charset=utf-8"}
    assert access_refusal("POST", "/api/analyses", typed, "", allowed, "") is None  # no token configured


def test_error_answers_exports_and_form_defaults():
    assert answers_json("/api/analyses/a1") and answers_json("/a/a1/export/chunks.csv") and answers_json("/a/a1/events")
    assert not answers_json("/a/a1") and not answers_json("/a/a1/f/player.gd")
    csv_file = export_download([{"a": 1, "b": "x"}], ["a", "b"], "csv", "a1-chunks")
    assert csv_file.filename == "a1-chunks.csv" and csv_file.content_type == "text/csv" and csv_file.text.splitlines()[0] == "a,b"
    json_file = export_download([{"at": datetime(2026, 1, 2, tzinfo=UTC)}], ["at"], "json", "x")
    assert json_file.filename == "x.json" and '"2026-01-02T00:00:00+00:00"' in json_file.text
    form = submit_form_values({"path": "/p"})
    assert (
        form["path"] == "/p"
        and form["prompt"].startswith("Is this Godot 3 or Godot 4")
        and set(form) == {"prompt", "path", "git_url", "git_ref", "text"}
    )
    assert (
        wv.ChunkFilter.from_query({"status": "done", "file": "a b.gd", "signal": "bogus"}).query_string()
        == "?status=done&file=a+b.gd"
    )
    assert wv.ChunkFilter().query_string() == ""


def test_a_posted_submit_form_keeps_its_fields_and_takes_the_archive_only_when_a_file_was_chosen():
    import io
    from types import SimpleNamespace

    from godot_rag.pipeline.web_requests import submit_form_of

    text = "# project.godot\nconfig_version=4\n"
    form = submit_form_of({"prompt": "Godot 3?", "text": text, "archive": SimpleNamespace(filename="", file=io.BytesIO(b"x"))})
    assert form.fields["text"] == text and form.fields["path"] == "" and form.archive == b""
    assert form.body["expanded_text"] == text and "snippet" not in form.body
    chosen = submit_form_of({"text": text, "archive": SimpleNamespace(filename="p.zip", file=io.BytesIO(b"PK"))})
    # With an archive, the pasted text is not submitted beside it.
    assert (chosen.archive, chosen.archive_name) == (b"PK", "p.zip") and "expanded_text" not in chosen.body
    assert submit_form_of({"archive": "a plain field"}).archive == b""
