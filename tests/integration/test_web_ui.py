"""The web screen in a real headless Chromium against the running gateway, and
its request checks over plain HTTP. Screenshots are kept under tmp/out/web_ui/."""

from __future__ import annotations

import csv
import http.client
import io
import json
import os
import shutil
import signal
import urllib.request
import uuid
import zipfile
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from godot_rag.cli import DEFAULT_PROMPT
from godot_rag.v1 import services_pb2 as spb

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian chromium is not installed (make test installs it when run as root)"
)
SHOTS = Path(__file__).resolve().parents[2] / "tmp" / "out" / "web_ui"
WIDTH = 1280


def _finished(stack, path: str = "", prompt: str = DEFAULT_PROMPT, **kw) -> str:
    if path:
        kw["path"] = path  # one input of the oneof, not an empty path beside it
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=prompt, **kw), timeout=120)
    for _ in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=300):
        pass
    return submitted.analysis_id


def _get(stack, path: str):
    with urllib.request.urlopen(stack.runtime["web"] + path.lstrip("/")) as r:
        return json.load(r)


def _chunk_api(stack, aid: str, chunk_id: str) -> dict:
    return _get(stack, f"api/analyses/{aid}/chunks/{quote(chunk_id, safe='')}")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (make test installs it when run as root)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser):
    ctx = browser.new_context(viewport={"width": WIDTH, "height": 900})
    pg = ctx.new_page()
    pg.dialogs = []
    pg.errors = []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    try:
        yield pg
    finally:
        ctx.close()


def _no_horizontal_overflow(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH


def test_web_api_serves_the_analysis(stack, repo):
    aid = _finished(stack, str(repo / "samples" / "mini_dodge.txt"))
    doc = _get(stack, f"api/analyses/{aid}")
    assert doc["analysis_id"] == aid and doc["status"] == "done"
    detail = _chunk_api(stack, aid, "player.gd:function:_process")
    assert detail["chunk"]["span"]["start_line"] == 12 and detail["chunk"]["span"]["end_line"] == 26
    assert detail["retrieval"]["query"]["query_text"].startswith("Input.is_action_pressed")
    # Tracking data never appears among the search clues.
    assert "player.gd" not in detail["retrieval"]["query"]["query_text"]
    assert {s["stage"] for s in detail["stages"]} == {"retrieve", "judge", "aggregate"}
    assert all(isinstance(s["updated_at"], str) for s in detail["stages"])  # timestamps as ISO 8601 text
    assert doc["progress"]["chunks_done"] == doc["progress"]["chunks_total"] > 0
    listed = next(a for a in _get(stack, "api/analyses") if a["analysis_id"] == aid)
    assert listed["status"] == "done" and listed["label"] == doc["verdict"]["label"]
    assert datetime.fromisoformat(listed["created_at"]).tzinfo is not None
    with urllib.request.urlopen(f"{stack.runtime['web']}export/analyses.csv") as r:
        exported = list(csv.DictReader(io.StringIO(r.read().decode("utf-8"))))
    assert next(a for a in exported if a["analysis_id"] == aid)["created_at"] == listed["created_at"]


@needs_chromium
def test_submitted_sample_updates_live_without_a_reload(stack, repo, page):
    judge = stack.supervisor.children["judge"].proc
    prompt = f"{DEFAULT_PROMPT} (live list {uuid.uuid4().hex[:8]})"  # a new prompt: a new analysis
    os.kill(judge.pid, signal.SIGSTOP)  # chunks pile up before the judge: the list must show them waiting
    try:
        page.goto(stack.runtime["web"])
        page.fill("#f-prompt", prompt)
        page.fill("#f-path", str(repo / "samples" / "godot3_project"))
        page.click("#submit button[type=submit]")
        page.wait_for_url("**/a/*")
        aid = urlsplit(page.url).path.split("/")[2]
        page.evaluate("window.__sameDocument = true")  # gone if the page reloads
        page.wait_for_selector("#chunk-table tr[data-chunk][data-status=waiting]", timeout=120_000)
        waiting = page.inner_text("#chunk-table tbody")
        assert " waiting" in waiting
        page.screenshot(path=str(SHOTS / "live_waiting.png"))
        assert page.get_attribute("#analysis", "data-live") == "open"
    finally:
        os.kill(judge.pid, signal.SIGCONT)
    page.wait_for_selector("#analysis[data-live=ended]", state="attached", timeout=240_000)
    page.wait_for_selector("#verdict .verdict-words strong")
    assert page.evaluate("window.__sameDocument") is True
    doc = _get(stack, f"api/analyses/{aid}")
    rows = page.query_selector_all("#chunk-table tr[data-chunk]")
    assert len(rows) == len(doc["chunks"]) > 0
    assert all(r.get_attribute("data-status") == "done" for r in rows)
    api_lines = {f"{c['source_file']} L{c['start_line']}-L{c['end_line']} done" for c in doc["chunks"]}
    page_lines = {" ".join(r.query_selector(".c-line").inner_text().split()) for r in rows}
    assert page_lines == api_lines
    assert page.inner_text("dd[data-count=done]") == str(len(doc["chunks"]))
    assert "a Godot 3 project" in page.inner_text("#verdict")
    assert page.query_selector("#verdict svg rect") is not None
    # Filters act on the live list in place.
    page.select_option("#chunk-filter select[name=signal]", "godot3")
    page.select_option("#chunk-filter select[name=file]", "player.gd")
    expected = [c for c in doc["chunks"] if c["signal"] == "godot3" and c["source_file"] == "player.gd"]
    visible = page.query_selector_all("#chunk-table tr[data-chunk]:not([hidden])")
    assert len(visible) == len(expected) > 0
    assert page.inner_text("#shown-count") == f"{len(expected)} of {len(doc['chunks'])} shown"
    assert "signal=godot3" in page.url and page.evaluate("window.__sameDocument") is True
    _no_horizontal_overflow(page)
    page.screenshot(path=str(SHOTS / "live_done_filtered.png"), full_page=True)
    assert page.dialogs == [] and page.errors == []


@needs_chromium
def test_archive_upload_field_and_exports(stack, repo, page, tmp_path):
    archive = tmp_path / "godot4_upload.zip"
    with zipfile.ZipFile(archive, "w") as z:
        root = repo / "samples" / "godot4_project"
        for f in sorted(root.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(root).as_posix())
    page.goto(stack.runtime["web"])
    page.set_input_files("#f-archive", str(archive))
    page.click("#submit button[type=submit]")
    page.wait_for_url("**/a/*")
    aid = urlsplit(page.url).path.split("/")[2]
    page.wait_for_selector("#analysis[data-status=done]", state="attached", timeout=240_000)
    doc = _get(stack, f"api/analyses/{aid}")
    assert doc["project_id"] == "archive:godot4_upload" and doc["verdict"]["label"] == "godot4"
    excluded = page.inner_text("#files details.excluded")
    assert all(f["source_file"] in excluded and f["excluded_reason"] in excluded for f in doc["files"] if f["status"] == "excluded")
    with urllib.request.urlopen(f"{stack.runtime['web']}a/{aid}/export/chunks.csv") as r:
        rows = list(csv.DictReader(io.StringIO(r.read().decode("utf-8"))))
    assert len(rows) == len(doc["chunks"]) and {r["status_words"] for r in rows} == {"done"}
    chunks_json = _get(stack, f"a/{aid}/export/chunks.json?signal=godot4")
    assert len(chunks_json) == sum(1 for c in doc["chunks"] if c["signal"] == "godot4")
    files_json = _get(stack, f"a/{aid}/export/files.json")
    assert [f["source_file"] for f in files_json] == [f["source_file"] for f in doc["files"]]


@needs_chromium
def test_chunk_deep_link_matches_the_api_trace(stack, repo, page):
    aid = _finished(stack, str(repo / "samples" / "mini_dodge.txt"))
    api = _chunk_api(stack, aid, "player.gd:function:_process")
    page.goto(f"{stack.runtime['web']}a/{aid}/f/player.gd#L12-L26")
    detail = page.wait_for_selector(".chunk-detail.current")
    assert page.get_attribute(".seg.current", "id") == "L12-L26"

    def field(name):
        return detail.query_selector(f"[data-field={name}]").inner_text()

    chunk, q, j = api["chunk"], api["retrieval"]["query"], api["judgment"]
    assert field("code_text") == chunk["code_text"]
    assert field("surrounding_context") == chunk["surrounding_context"]
    assert field("chunk_id") == chunk["chunk_id"] and field("chunk_kind") == chunk["chunk_kind"]
    assert field("node_kind") == chunk["node_kind"] and field("name") == chunk["name"]
    assert field("query_text") == q["query_text"] and field("intent") == q["intent"]
    for key in ("query_terms", "api_call_candidates", "symbol_candidates", "reference_candidates", "prompt_terms"):
        assert field(key) == ", ".join(q.get(key, [])), key
    tracking = {el.get_attribute("data-track"): el.inner_text() for el in detail.query_selector_all("[data-track]")}
    assert tracking["chunk_id"] == chunk["chunk_id"] and tracking["chunk_order"] == str(chunk["chunk_order"])
    assert tracking["source_file"] == api["source_file"] and tracking["analysis"] == aid
    assert "not sent to search" in detail.query_selector(".tracking h3").inner_text()
    # The tracking data is apart from the clues: none of it is in the query text.
    assert api["source_file"] not in field("query_text") and chunk["chunk_id"] not in field("query_text")
    stages = {r.get_attribute("data-stage"): r.inner_text().split("\t") for r in detail.query_selector_all("tr[data-stage]")}
    for s in api["stages"]:
        assert stages[s["stage"]] == [s["stage"], s["status"], str(s["attempts"]), s["worker"], s["trace_id"]]
    assert field("signal") == j["judgment"]["signal"] and field("model") == j["model"]
    assert field("needs_migration") == ("yes" if j["judgment"]["needs_migration"] else "no")
    assert field("confidence") == f"{j['judgment']['confidence']:.2f}"
    assert field("prompt_version") == j["prompt_version"] and field("explanation") == j["judgment"]["explanation"]
    assert field("latency") == f"{round(j['latency_ms'], 1)} ms"
    assert field("judge").startswith(j["judge_kind"])
    notes = detail.query_selector_all("tr[data-note]")
    assert len(notes) == len(j["judgment"]["migration_notes"])
    raw = detail.query_selector("details.raw")
    assert not raw.get_attribute("open")
    raw.query_selector("summary").click()
    assert json.loads(raw.query_selector("pre").inner_text()) == j["judgment"]
    hits = api["retrieval"]["hits"]
    cand = detail.query_selector_all("table.candidates tbody tr")
    assert [r.get_attribute("data-record") for r in cand] == [h["record_id"] for h in hits]
    assert [r.query_selector("td[data-col=fused] strong").inner_text() for r in cand] == [f"{h['score']:.3f}" for h in hits]
    cited = {e["record_id"] for e in j["judgment"]["evidence"] if e["relevant"]} | {
        n["basis_record_id"] for n in j["judgment"]["migration_notes"]
    }
    assert {r.get_attribute("data-record") for r in cand if "cited" in (r.get_attribute("class") or "")} == cited & {
        h["record_id"] for h in hits
    }
    assert len(detail.query_selector_all("dl.legend dt")) == 6
    _no_horizontal_overflow(page)
    page.screenshot(path=str(SHOTS / "chunk_deep_link.png"))
    # The link survives a reload; neighbours are one click (or one key) away.
    page.reload()
    assert page.wait_for_selector(".chunk-detail.current").get_attribute("id") == "detail-L12-L26"
    nxt = page.query_selector(".chunk-detail.current a[rel=next]")
    target = nxt.get_attribute("href")
    nxt.click()
    # Wait for the move itself: the element marked current before the click or key still matches at first.
    assert page.wait_for_selector(f"#detail-{target[1:]}.current").get_attribute("id") == "detail-" + target[1:]
    page.keyboard.press("k")
    assert page.wait_for_selector("#detail-L12-L26.current").get_attribute("id") == "detail-L12-L26"
    focused = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert page.evaluate("document.activeElement.classList.contains('seg-head')") and focused != "none"
    # A range that no chunk spans exactly is shown on the chunk holding its first line, with a note.
    page.goto(f"{stack.runtime['web']}a/{aid}/f/player.gd#L14-L30")
    assert page.wait_for_selector(".chunk-detail.current").get_attribute("id") == "detail-L12-L26"
    assert "No chunk spans exactly L14-L30" in page.inner_text("#range-note")
    assert page.dialogs == [] and page.errors == []


@needs_chromium
def test_candidate_table_sorts_and_filters(stack, repo, page):
    aid = _finished(stack, str(repo / "samples" / "mini_dodge.txt"))
    page.goto(f"{stack.runtime['web']}a/{aid}/f/player.gd#L12-L26")
    table = page.wait_for_selector(".chunk-detail.current table.candidates")

    def column(attr):
        return [r.get_attribute(f"data-{attr}") for r in table.query_selector_all("tbody tr")]

    table.query_selector("button[data-sort=vector]").click()
    vec = [float(v) for v in column("vector") if v]
    assert vec == sorted(vec, reverse=True) and len(vec) > 3
    assert column("vector")[len(vec) :] == [""] * (len(column("vector")) - len(vec))  # records without a vector last
    assert (
        table.query_selector("button[data-sort=vector]").evaluate("b => b.closest('th').getAttribute('aria-sort')") == "descending"
    )
    table.query_selector("button[data-sort=vector]").click()
    vec_up = [float(v) for v in column("vector") if v]
    assert vec_up == sorted(vec_up)
    table.query_selector("button[data-sort=title]").click()
    assert page.evaluate("ts => ts.every((t, i) => i === 0 || ts[i - 1].localeCompare(t) <= 0)", column("title"))
    page.fill(".chunk-detail.current .cand-min", "0.5")
    shown = [float(r.get_attribute("data-fused")) for r in table.query_selector_all("tbody tr:not([hidden])")]
    hidden = [float(r.get_attribute("data-fused")) for r in table.query_selector_all("tbody tr[hidden]")]
    assert shown and hidden and min(shown) >= 0.5 > max(hidden)
    table.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "candidates_sorted.png"))


@needs_chromium
def test_why_not_retrieved_for_a_known_record(stack, repo, page):
    aid = _finished(stack, str(repo / "samples" / "mini_dodge.txt"))
    chunk_id = "player.gd:function:_process"
    api = _chunk_api(stack, aid, chunk_id)
    kept = api["retrieval"]["hits"][0]["record_id"]
    page.goto(f"{stack.runtime['web']}a/{aid}/f/player.gd#L12-L26")
    form = page.wait_for_selector(".chunk-detail.current form.why")
    form.query_selector("input[name=why]").fill("docs:4:Vector2")  # a class every chunk mentions, never in its top 5
    form.query_selector("button").click()
    result = page.wait_for_selector(".chunk-detail.current .why-result")
    expected = _get(stack, f"api/analyses/{aid}/why-not?chunk={quote(chunk_id, safe='')}&record=docs:4:Vector2")["result"]
    assert expected["cut"] in ("candidate_selection", "table_limit")
    assert expected["summary"] in result.inner_text()
    ranks = {r.get_attribute("data-search"): r.inner_text().split("\t")[1] for r in result.query_selector_all("tr[data-search]")}
    assert ranks == {s["search"]: s["text"] for s in expected["searches"]}
    assert set(ranks) == {"keys", "vector", "text", "trigram"}
    result.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "why_not.png"))
    # A record the search kept answers with its rank, by title as well as by id.
    doc = _get(stack, f"api/analyses/{aid}/why-not?chunk={quote(chunk_id, safe='')}&record={quote(kept, safe='')}")
    assert doc["result"]["cut"] == "retrieved" and doc["result"]["facts"]["fused_rank"] == 1
    title = api["retrieval"]["hits"][0]["title"]
    by_title = _get(stack, f"api/analyses/{aid}/why-not?chunk={quote(chunk_id, safe='')}&record={quote(title, safe='')}")
    assert by_title["matches"][0]["id"] == kept


@needs_chromium
def test_replay_button_replays_the_chunk_as_a_new_version(stack, repo, page):
    # Its own prompt: the replay changes the current version of the analysis it replays.
    aid = _finished(stack, str(repo / "samples" / "mini_dodge.txt"), prompt="Replay button: Godot 3 or Godot 4?")
    chunk_id = "player.gd:function:_process"
    page.goto(f"{stack.runtime['web']}a/{aid}/f/player.gd#L12-L26")
    form = page.wait_for_selector(".chunk-detail.current form.replay")
    assert form.get_attribute("data-chunk") == chunk_id
    form.query_selector("select[name=stage]").select_option("retrieve")
    form.query_selector("input[name=limit_per_table]").fill("1")
    form.query_selector("button").click()
    page.wait_for_selector(".chunk-detail.current form.replay[data-state=done]", timeout=180_000)
    version = form.get_attribute("data-version")
    trace = stack.gateway.GetChunkTrace(spb.ChunkTraceRequest(analysis_id=aid, chunk_id=chunk_id), timeout=30)
    assert [j.version_id for j in trace.judgments if j.current] == [version] and len(trace.judgments) == 2
    assert len(trace.hits) == len({h.table for h in trace.hits})  # one hit per table now
    assert version in form.query_selector(".replay-status").inner_text()
    assert page.errors == []


SCRIPTED = """# project.godot
config_version=4

# <script>window.__xss='file'</script>.gd
extends Node
# <script>window.__xss='comment'</script>
func _ready():
\tprint("</pre><script>window.__xss='text'</script><img src=x onerror=\\"window.__xss='img'\\">")

# scene.tscn
[gd_scene load_steps=2 format=2]

[node name="<script>window.__xss='node'</script>" type="Node2D"]
"""


@needs_chromium
def test_script_in_names_and_text_is_shown_as_text(stack, page):
    aid = _finished(stack, expanded_text=SCRIPTED + f"\n# note.md\nrun {uuid.uuid4().hex}\n")
    doc = _get(stack, f"api/analyses/{aid}")
    script_file = next(f["source_file"] for f in doc["files"] if f["source_file"].endswith(".gd"))
    page.goto(f"{stack.runtime['web']}a/{aid}")
    page.wait_for_selector("#chunk-table tr[data-chunk]")
    text = page.inner_text("body")
    assert "<script>window.__xss='node'</script>" in text  # the node name, in the chunk list
    assert "<script>window.__xss='file'<" in text  # the file name (its '/' makes a folder of its head)
    page.screenshot(path=str(SHOTS / "script_names_analysis.png"))
    page.goto(f"{stack.runtime['web']}a/{aid}/f/{quote(script_file, safe='/')}#L2-L4")
    detail = page.wait_for_selector(".chunk-detail.current")
    assert "</pre><script>window.__xss='text'</script>" in detail.query_selector("[data-field=code_text]").inner_text()
    assert "<script>window.__xss='comment'</script>" in page.inner_text(".source")
    page.goto(f"{stack.runtime['web']}a/{aid}/f/scene.tscn#L3-L3")
    assert "<script>window.__xss='node'</script>" in page.wait_for_selector(".chunk-detail.current").inner_text()
    assert page.evaluate("window.__xss") is None
    assert page.dialogs == [] and page.errors == []


def _raw(stack, method: str, path: str, headers: dict, body: bytes = b"") -> tuple[int, str]:
    u = urlsplit(stack.runtime["web"])
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_cross_site_and_rebinding_requests_are_refused(stack):
    u = urlsplit(stack.runtime["web"])
    here = f"{u.hostname}:{u.port}"
    snippet = json.dumps({"prompt": DEFAULT_PROMPT, "snippet": "extends KinematicBody2D\n"}).encode()
    json_ct = {"Content-Type": "application/json"}
    assert _raw(stack, "GET", "/", {"Host": here})[0] == 200
    assert _raw(stack, "GET", "/api/analyses", {"Host": f"localhost:{u.port}"})[0] == 200
    # DNS rebinding: a foreign name resolving to loopback.
    assert _raw(stack, "GET", "/api/analyses", {"Host": f"attacker.example:{u.port}"})[0] == 403
    # CSRF: a foreign page posting JSON, a form, or a text/plain "simple request".
    assert _raw(stack, "POST", "/api/analyses", {"Host": here, "Origin": "http://attacker.example", **json_ct}, snippet)[0] == 403
    assert (
        _raw(
            stack,
            "POST",
            "/submit",
            {"Host": here, "Origin": "http://attacker.example", "Content-Type": "application/x-www-form-urlencoded"},
            b"prompt=x&text=extends+Node",
        )[0]
        == 403
    )
    assert (
        _raw(stack, "POST", "/api/analyses", {"Host": here, "Referer": "http://attacker.example/page", **json_ct}, snippet)[0]
        == 403
    )
    status, body = _raw(
        stack, "POST", "/api/analyses", {"Host": here, "Origin": f"http://{here}", "Content-Type": "text/plain"}, snippet
    )
    assert status == 415 and "application/json" in body
    # Cross-origin reads of the API are refused too.
    assert _raw(stack, "GET", "/api/analyses", {"Host": here, "Origin": "http://attacker.example"})[0] == 403
    # The same origin (and a non-browser client without Origin) is served.
    status, body = _raw(stack, "POST", "/api/analyses", {"Host": here, "Origin": f"http://{here}", **json_ct}, snippet)
    assert status == 200 and json.loads(body)["analysis_id"]
    assert _raw(stack, "POST", "/api/analyses", {"Host": here, **json_ct}, snippet)[0] == 200
    status, _ = _raw(stack, "GET", "/", {"Host": here})
    assert status == 200


@needs_chromium
def test_link_to_a_file_changed_in_a_later_analysis_is_marked_outdated(stack, repo, page, tmp_path):
    project = tmp_path / f"outdated_{uuid.uuid4().hex[:8]}"
    shutil.copytree(repo / "samples" / "godot3_project", project)
    old = _finished(stack, str(project))
    player = project / "player.gd"
    player.write_text(player.read_text(encoding="utf-8") + "\nfunc added_later():\n\tpass\n", encoding="utf-8")
    new = _finished(stack, str(project))
    assert new != old
    page.goto(f"{stack.runtime['web']}a/{old}/f/player.gd#L1-L1")
    banner = page.wait_for_selector("p.outdated[role=status]:not([hidden])")
    assert "Outdated" in banner.inner_text()
    assert banner.query_selector("a").get_attribute("href") == f"/a/{new}/f/player.gd"
    assert page.wait_for_selector(".chunk-detail.current").get_attribute("id") == "detail-L1-L1"  # the old range still opens
    # An unchanged file of the same old analysis is not outdated, nor is the newer copy.
    page.goto(f"{stack.runtime['web']}a/{old}/f/main.gd")
    page.wait_for_selector(".source")
    assert "Outdated" not in page.inner_text("main")
    page.goto(f"{stack.runtime['web']}a/{new}/f/player.gd#L1-L1")
    page.wait_for_selector(".chunk-detail.current")
    assert "Outdated" not in page.inner_text("main")


@needs_chromium
def test_file_page_shows_the_proposed_patch_with_its_basis_and_todos(stack, repo, page):
    aid = _finished(stack, str(repo / "samples" / "godot3_project"))
    patched = stack.gateway.Patch(spb.PatchRequest(analysis_id=aid), timeout=300)
    expected = next(f for f in patched.files if f.source_file == "player.gd")
    assert expected.hunks and expected.todos
    page.goto(f"{stack.runtime['web']}a/{aid}/f/player.gd")
    section = page.wait_for_selector("section#patch")
    hunks = section.query_selector_all("article.hunk")
    assert [h.get_attribute("data-hunk") for h in hunks] == [h.hunk for h in expected.hunks]
    # Every change of every hunk with its basis: rule, record, confidence, receiver.
    rows = section.query_selector_all("tr.patch-change")
    want = [(c.rule, c.record_id, f"{c.confidence:.2f}", c.receiver or "-") for h in expected.hunks for c in h.changes]
    got = [
        (
            r.get_attribute("data-rule"),
            r.get_attribute("data-record"),
            r.query_selector("td.num").inner_text(),
            r.query_selector("[data-field=receiver]").inner_text(),
        )
        for r in rows
    ]
    assert got == want
    assert any(r.startswith("self (extends KinematicBody2D)") for _, _, _, r in got)
    # The diff lines are those of the hunk, removals and additions marked.
    first = hunks[0].query_selector_all(".diff .dl")
    assert [ln.inner_text() for ln in first] == expected.hunks[0].text.splitlines()[1:]
    assert hunks[0].query_selector(".dl-del") and hunks[0].query_selector(".dl-add")
    todos = section.query_selector_all("tr.patch-todo")
    assert [t.get_attribute("data-rule") for t in todos] == [t.rule for t in expected.todos]
    _no_horizontal_overflow(page)
    section.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "file_patch.png"))
    # A record links to the candidate row of its chunk when the retriever found it there ...
    links = section.query_selector_all("a.record")
    assert len(links) == len(rows)
    for link in links:
        href = link.get_attribute("href")
        if href.startswith("#cand-"):
            assert page.query_selector(href).get_attribute("data-record") == link.inner_text()
        else:
            assert "why=" in href and "chunk=" in href
    # ... otherwise to "Why not retrieved?" for it on that chunk.
    why = next((a for a in links if "why=" in a.get_attribute("href")), None)
    if why is not None:
        record = why.inner_text()
        why.click()
        result = page.wait_for_selector(".chunk-detail.current .why-result")
        assert record in result.inner_text()
    else:
        cand = links[0]
        cand.click()
        assert page.evaluate("location.hash") == cand.get_attribute("href")
    # A file the patch does not handle has no patch section.
    page.goto(f"{stack.runtime['web']}a/{aid}/f/icon.png.import")
    page.wait_for_selector("#file")
    assert page.query_selector("section#patch") is None
