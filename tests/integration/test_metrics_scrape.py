"""Every process of the running stack serves /metrics at the address `godot-rag up` recorded in runtime.json,
and an analysis moves its counters: messages processed in every stage, the retriever's KB search histogram,
the gateway's analyses by status."""

from __future__ import annotations

import time
import urllib.request
import uuid

from prometheus_client.parser import text_string_to_metric_families

from godot_rag.supervisor import SERVICES
from godot_rag.v1 import services_pb2 as spb


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode("utf-8")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def total(samples: dict, name: str, **labels: str) -> float:
    return sum(v for (n, lab), v in samples.items() if n == name and all((k, v2) in lab for k, v2 in labels.items()))


def by_service(urls: dict[str, str]) -> dict[str, dict]:
    """Scrape every process; workers of one stage (retriever, retriever.2) are summed under the service."""
    out: dict[str, dict] = {}
    for key, url in urls.items():
        merged = out.setdefault(key.split(".")[0], {})
        for k, v in scrape(url).items():
            merged[k] = merged.get(k, 0.0) + v
    return out


def test_every_process_serves_metrics_and_an_analysis_moves_the_counters(stack, tmp_path):
    urls = stack.runtime["metrics"]
    assert set(urls) == set(stack.supervisor.children)
    assert {k.split(".")[0] for k in urls} == set(SERVICES)
    assert len(set(urls.values())) == len(urls)  # one address per process
    before = by_service(urls)
    for service, samples in before.items():
        assert total(samples, "process_resident_memory_bytes") > 0, service

    # Content no earlier analysis had: every stage must do real work (no reuse by content).
    tag = uuid.uuid4().hex[:10]
    project = tmp_path / "p"
    project.mkdir()
    (project / "project.godot").write_text(f'config_version=4\n\n[application]\n\nconfig/name="m{tag}"\n')
    (project / f"p{tag}.gd").write_text(
        f"extends KinematicBody2D\n\nvar v{tag} = Vector2()\n\n\nfunc f{tag}(delta):\n"
        f'\tv{tag} = move_and_slide(v{tag}, Vector2.UP)\n\tyield(get_tree(), "idle_frame")\n'
    )
    submitted = stack.gateway.Submit(spb.SubmitRequest(prompt=f"Godot 3 or 4? {tag}", path=str(project)), timeout=120)
    # While it runs (and once it is done) the stage counters only go up.
    for _ in stack.gateway.WatchProgress(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=300):
        pass
    result = stack.gateway.Get(spb.GetRequest(analysis_id=submitted.analysis_id), timeout=60)
    assert result.status.startswith(("done", "completed"))
    after = by_service(urls)

    processed = "godot_rag_stage_messages_processed_total"
    for service in ("parser", "chunker", "retriever", "judge", "aggregator"):
        assert total(after[service], processed) > total(before[service], processed), service
    chunks = len(result.chunks)
    assert total(after["retriever"], processed) - total(before["retriever"], processed) >= chunks
    searches = "godot_rag_kb_search_seconds_count"
    assert total(after["retriever"], searches) - total(before["retriever"], searches) >= 1
    assert total(after["retriever"], "godot_rag_kb_search_seconds_sum") > total(
        before["retriever"], "godot_rag_kb_search_seconds_sum"
    )
    # The consumer backlog gauges exist for each stage (read from JetStream).
    assert any(n == "godot_rag_consumer_pending_messages" for n, _ in after["judge"])

    # The gateway counts analyses by status every METRICS_POLL_S seconds: wait for a count that includes this one.
    wanted = sum(1 for r in stack.sql("select 1 from godot_rag.analyses where status = %s", (result.status,)))
    deadline = time.monotonic() + stack.supervisor.settings.metrics_poll_s + 30
    seen = 0.0
    while time.monotonic() < deadline:
        seen = total(scrape(urls["gateway"]), "godot_rag_analyses", status=result.status)
        if seen >= wanted:
            break
        time.sleep(0.5)
    assert seen == wanted
