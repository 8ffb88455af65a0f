"""Load test of an OpenAI-compatible judge server (vLLM on a GPU machine) with real judgment requests.

Run: PYTHONPATH=src .venv/bin/python benchmarks/load_llm.py --url http://HOST:8000 --model Qwen/Qwen3-8B \\
         [--concurrency 8 16 32 64 128] [--requests 256] [--flavor vllm] [--json out.json]

Requests are the ones the LLM judge sends: the versioned judge prompt
(``godot_rag.prompts.render_messages``) for the chunks of the sample projects,
with knowledge-base candidates (API mapping records whose old symbol the chunk
names, as the retriever would surface them), and the judgment contract as the
JSON schema of the structured output. At each concurrency level ``--requests``
requests are sent with that many in flight, and it reports requests/s, prompt
and completion tokens/s, p50/p95 latency, errors, and the prefix-cache hit rate
read from the server's Prometheus ``/metrics`` before and after the level
(vLLM's ``prefix_cache_hits`` / ``prefix_cache_queries`` counters) when exposed.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent

from godot_rag.domain.chunking.direct import chunk_direct  # noqa: E402
from godot_rag.domain.chunking.gdscript import parse_gdscript  # noqa: E402
from godot_rag.domain.retrieval.query import build_retriever_query  # noqa: E402
from godot_rag.infra.llm_client import LLMClient  # noqa: E402
from godot_rag.prompts import Candidate, PromptChunk, judge_prompts, render_messages  # noqa: E402

PROMPT = "Is this Godot 3 or Godot 4, and what is the basis for converting it?"


def _mapping_candidates() -> list[tuple[str, Candidate]]:
    from godot_rag.pipeline.kb import knowledge_records

    out = []
    for r in knowledge_records(None):
        if r.table != "api_mapping":
            continue
        p = r.payload
        old = str(p.get("old_symbol") or "")
        if len(old) < 4:
            continue
        out.append(
            (
                old,
                Candidate(
                    table="api_mapping",
                    record_id=r.id,
                    title=f"{old} -> {p.get('new_symbol', '')}",
                    content=" ".join(str(p.get(k) or "") for k in ("description", "rationale")).strip(),
                    before_code=str(p.get("before_code") or ""),
                    after_code=str(p.get("after_code") or ""),
                    enabled=p.get("enabled") if isinstance(p.get("enabled"), bool) else None,
                ),
            )
        )
    return out


def judgment_messages(limit: int = 0) -> list[list[dict]]:
    """Chat messages of real first-attempt judgments, one per sample chunk."""
    from godot_rag.domain.chunking.files import direct_kind
    from godot_rag.domain.ingest.policy import scan_folder

    ps = judge_prompts()
    mapping = _mapping_candidates()
    out: list[list[dict]] = []
    for folder in ("samples/godot3_project", "samples/godot4_project"):
        for f in scan_folder(REPO / folder, max_bytes=2 * 1024 * 1024):
            if not f.included:
                continue
            result = (
                parse_gdscript(f.source_file, f.data)
                if f.source_kind == "gdscript"
                else chunk_direct(f.source_file, direct_kind(f.source_kind), f.data)
            )
            for chunk in result.chunks:
                query = build_retriever_query(prompt=PROMPT, chunk=chunk)
                text = chunk.code_text
                cands = [c for old, c in mapping if re.search(rf"\b{re.escape(old)}\b", text)][:5]
                pc = PromptChunk(
                    prompt=PROMPT,
                    intent=query.intent,
                    source_kind=f.source_kind,
                    chunk_kind=chunk.chunk_kind,
                    chunk_name=chunk.name,
                    start_line=chunk.span.start_line,
                    end_line=max(chunk.span.start_line, chunk.span.end_line),
                    code_text=text,
                    surrounding_context=chunk.surrounding_context,
                    candidates=tuple(cands),
                )
                out.append(render_messages(ps, pc))
    return out[:limit] if limit else out


def prefix_cache_counters(base_url: str) -> tuple[float, float] | None:
    """(hits, queries) of vLLM's prefix cache from /metrics, or None when not exposed."""
    try:
        resp = httpx.get(base_url.rstrip("/").removesuffix("/v1") + "/metrics", timeout=5)
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    return prefix_cache_of_metrics(resp.text)


def prefix_cache_of_metrics(text: str) -> tuple[float, float] | None:
    """(hits, queries) summed over the prefix-cache counters of a Prometheus exposition (vLLM's V1 engine:
    `vllm:prefix_cache_hits_total{...}`; V0: `vllm:gpu_prefix_cache_hits`), or None when it has none."""
    hits = queries = 0.0
    found = False
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"(vllm:(?:gpu_)?prefix_cache_(hits|queries))(?:_total)?(?:\{[^}]*\})?\s+([0-9.eE+-]+)", line)
        if m:
            found = True
            if m.group(2) == "hits":
                hits += float(m.group(3))
            else:
                queries += float(m.group(3))
    return (hits, queries) if found else None


async def drive(
    url: str,
    model: str,
    *,
    concurrency: int,
    total: int,
    flavor: str = "vllm",
    api_key: str = "",
    max_tokens: int = 1024,
    timeout_s: float = 300.0,
) -> dict:
    from godot_rag.prompts import contract_schema

    client = LLMClient(
        url,
        model,
        api_key=api_key,
        flavor=flavor,
        timeout_s=timeout_s,
        max_concurrency=concurrency,
        retries=0,
        max_tokens=max_tokens,
    )
    schema = contract_schema()
    pool = judgment_messages()
    requests = list(itertools.islice(itertools.cycle(pool), total))
    latencies: list[float] = []
    prompt_tokens = completion_tokens = errors = 0
    before = prefix_cache_counters(url)
    queue: asyncio.Queue = asyncio.Queue()
    for m in requests:
        queue.put_nowait(m)

    async def worker() -> None:
        nonlocal prompt_tokens, completion_tokens, errors
        while not queue.empty():
            messages = queue.get_nowait()
            started = time.perf_counter()
            try:
                reply = await client.chat(messages, schema)
            except Exception as exc:  # noqa: BLE001 -- any failure is an error of the load test, never stops it
                errors += 1
                print(f"request failed: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
                continue
            latencies.append((time.perf_counter() - started) * 1000)
            prompt_tokens += reply.prompt_tokens
            completion_tokens += reply.completion_tokens

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    await client.aclose()
    after = prefix_cache_counters(url)
    lat = sorted(latencies)

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, int(round(p / 100 * (len(lat) - 1))))] if lat else 0.0

    hit_rate = None
    if before is not None and after is not None and after[1] > before[1]:
        hit_rate = round((after[0] - before[0]) / (after[1] - before[1]), 3)
    return {
        "concurrency": concurrency,
        "requests": total,
        "ok": len(latencies),
        "errors": errors,
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(latencies) / wall, 2),
        "prompt_tokens_per_s": round(prompt_tokens / wall, 1),
        "completion_tokens_per_s": round(completion_tokens / wall, 1),
        "p50_ms": round(pct(50), 1),
        "p95_ms": round(pct(95), 1),
        "prefix_cache_hit_rate": hit_rate,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True, help="base URL of the OpenAI-compatible server (http://host:8000)")
    p.add_argument("--model", required=True, help="served model name")
    p.add_argument("--api-key", default="")
    p.add_argument("--flavor", default="vllm", choices=("vllm", "llamacpp", "openai"))
    p.add_argument("--concurrency", type=int, nargs="*", default=[8, 16, 32, 64, 128])
    p.add_argument("--requests", type=int, default=256, help="requests per concurrency level (default 256)")
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    print(f"{len(judgment_messages())} distinct judgment requests from the sample chunks")
    print(
        f"{'conc':>5} {'req/s':>8} {'prompt tok/s':>13} {'gen tok/s':>10} {'p50 ms':>9} {'p95 ms':>9} {'errors':>7} {'prefix hit':>10}"
    )
    rows = []
    for c in args.concurrency:
        r = asyncio.run(
            drive(
                args.url,
                args.model,
                concurrency=c,
                total=args.requests,
                flavor=args.flavor,
                api_key=args.api_key,
                max_tokens=args.max_tokens,
            )
        )
        rows.append(r)
        hit = "-" if r["prefix_cache_hit_rate"] is None else f"{r['prefix_cache_hit_rate']:.0%}"
        print(
            f"{c:>5} {r['requests_per_s']:>8.2f} {r['prompt_tokens_per_s']:>13.0f} {r['completion_tokens_per_s']:>10.0f} "
            f"{r['p50_ms']:>9.0f} {r['p95_ms']:>9.0f} {r['errors']:>7} {hit:>10}",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
