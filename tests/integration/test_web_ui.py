"""The web debug screen in a real headless Chromium against the running gateway."""

from __future__ import annotations

import json
import shutil
import urllib.request

import pytest

from godot_rag.cli import DEFAULT_PROMPT
from godot_rag.v1 import services_pb2 as spb

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _finished(stack, path: str) -> str:
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=DEFAULT_PROMPT, path=path), timeout=120)
    for _ in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=300):
        pass
    return submitted.analysis_id


def test_web_api_serves_the_analysis(stack, repo):
    aid = _finished(stack, str(repo / "samples" / "mini_dodge.txt"))
    base = stack.runtime["web"]
    with urllib.request.urlopen(f"{base}api/analyses/{aid}") as r:
        doc = json.load(r)
    assert doc["analysis_id"] == aid and doc["status"] == "done"
    chunk_id = "player.gd:function:_process"
    with urllib.request.urlopen(f"{base}api/analyses/{aid}/chunks/{urllib.request.quote(chunk_id, safe='')}") as r:
        detail = json.load(r)
    assert detail["chunk"]["span"]["start_line"] == 12 and detail["chunk"]["span"]["end_line"] == 26
    assert detail["retrieval"]["query"]["query_text"].startswith("Input.is_action_pressed")
    # Tracking data never appears among the search clues.
    assert "player.gd" not in detail["retrieval"]["query"]["query_text"]
    assert {s["stage"] for s in detail["stages"]} == {"retrieve", "judge", "aggregate"}


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (make test installs it when run as root)")
def test_debug_screen_shows_files_chunks_and_the_judgment(stack, repo):
    from playwright.sync_api import sync_playwright

    aid = _finished(stack, str(repo / "samples" / "godot3_project"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{stack.runtime['web']}#{aid}")
            page.wait_for_selector("#chunks tr[data-chunk]")
            files_text = page.inner_text("#analysis")
            assert "README.md" in files_text and "documentation files are excluded" in files_text
            assert "godot3" in files_text
            page.click("#chunks tr[data-chunk='player.gd:class_extends:1']")
            page.wait_for_selector("#detail h3")
            detail = page.inner_text("#detail")
            assert "Current file: player.gd" in detail and "lines L1-L1" in detail
            assert "extends KinematicBody2D" in detail
            assert "KinematicBody2D → CharacterBody2D" in detail
        finally:
            browser.close()
