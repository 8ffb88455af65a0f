"""Retrieval quality on the labelled set (tests/retrieval_set/cases.jsonl): `make eval-retrieval`.

Every case is a small file (a script, scene, resource, .import or project.godot) run through the real chunker of its kind; the chosen chunk's
RetrieverQuery (the design) is searched over the full knowledge base in three
modes: vector-only, lexical-only (ts_rank + trigram) and hybrid (the default).

Metrics, per expected record, ranked within its own table's hit list (the
search returns per-table lists):
- Recall@5: share of a case's expected records ranked 1..5 in their table, averaged over cases
  (an expected "a|b" counts at the better rank of the two);
- MRR: 1 / best rank of any expected record of the case (0 when none is in the
  top 10), averaged over cases.
``--variants`` also measures the alternatives behind the defaults (fusion by
reciprocal rank; lexical query from the query terms alone, without the chunk's
other identifiers; "deprecated renamed" added to the migration prompt terms as
in the design's reference code).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from _kb_env import knowledge_base  # noqa: E402

from godot_rag.domain.chunking.files import chunk_file  # noqa: E402
from godot_rag.domain.ingest.policy import classify_path  # noqa: E402
from godot_rag.domain.retrieval import fusion  # noqa: E402
from godot_rag.domain.retrieval.query import build_embedding_text, build_retriever_query  # noqa: E402
from godot_rag.infra import kb_store  # noqa: E402
from godot_rag.infra.embedder import EMBEDDER_BACKENDS, MiniLMEmbedder  # noqa: E402
from godot_rag.settings import Settings  # noqa: E402

CASES = REPO / "tests" / "retrieval_set" / "cases.jsonl"
TABLES = ("docs_chunks", "api_mapping", "label_prototypes")
DEPTH = 10


def load_cases(path: Path = CASES) -> list[dict]:
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for c in cases:
        result = chunk_file(c["file"], classify_path(c["file"])[0], c["source"].encode())
        chunks = {ch.chunk_id: ch for ch in result.chunks}
        if c["chunk"] not in chunks:
            raise SystemExit(f"case {c['id']}: chunk {c['chunk']} not in the parse ({sorted(chunks)})")
        c["query"] = build_retriever_query(prompt=c["prompt"], chunk=chunks[c["chunk"]])
    return cases


def check_expected(dsn: str, cases: list[dict]) -> None:
    wanted = {alt for c in cases for e in c["expect"] for alt in e.split("|")}
    with psycopg.connect(dsn) as conn:
        found = set()
        for table in TABLES:
            ids = [e.split(":", 1)[1] for e in wanted if e.startswith(table + ":")]
            rows = conn.execute(f"select id from godot_rag.{table} where id = any(%s)", (ids,)).fetchall()
            found |= {f"{table}:{r[0]}" for r in rows}
    missing = sorted(wanted - found)
    if missing:
        raise SystemExit(f"expected records missing from the knowledge base: {missing}")


async def run_mode(dsn: str, cases: list[dict], vectors: dict[str, list[float]], config: fusion.SearchConfig) -> list[dict]:
    out = []
    async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as conn:
        index = await kb_store.load_vector_index(conn)
        lexical = await kb_store.load_lexical_index(conn)
        for c in cases:
            q = c["query"]
            hits = await kb_store.search(
                conn,
                q,
                tables=TABLES,
                limit_per_table=DEPTH,
                query_embedding=vectors.get(c["id"]),
                vector_index=index,
                lexical_index=lexical,
                config=config,
            )
            ranks: dict[str, int] = {}
            per_table: dict[str, int] = {}
            for h in hits:
                per_table[h.table_name] = per_table.get(h.table_name, 0) + 1
                ranks.setdefault(f"{h.table_name}:{h.record_id}", per_table[h.table_name])
            exp = [min((ranks[a] for a in e.split("|") if a in ranks), default=None) for e in c["expect"]]
            recall5 = sum(1 for r in exp if r is not None and r <= 5) / len(exp)
            mrr = max((1.0 / r for r in exp if r is not None), default=0.0)
            out.append({"id": c["id"], "category": c["category"], "recall5": recall5, "mrr": mrr, "ranks": exp})
    return out


def summarize(results: list[dict]) -> dict:
    cats: dict[str, list[dict]] = {"all": results}
    for r in results:
        cats.setdefault(r["category"], []).append(r)
    return {
        cat: {"n": len(rs), "recall5": sum(r["recall5"] for r in rs) / len(rs), "mrr": sum(r["mrr"] for r in rs) / len(rs)}
        for cat, rs in cats.items()
    }


def print_table(rows: list[tuple[str, dict]]) -> None:
    cats = ["all", "renamed_godot3", "godot3_changed", "godot4", "neutral", "direct"]
    head = f"{'mode':<34}" + "".join(f"{c:>22}" for c in cats)
    print(head)
    print(f"{'':<34}" + "".join(f"{'R@5   MRR  (n)':>22}" for _ in cats))
    for name, s in rows:
        line = f"{name:<34}"
        for c in cats:
            v = s.get(c)
            line += f"{v['recall5']:>9.3f} {v['mrr']:>5.3f} ({v['n']:>3})" if v else f"{'-':>22}"
        print(line)


async def main_async(args) -> int:
    cases = load_cases()
    # The KB's vectors come from the shipped float32 file; only query vectors use --backend.
    embedder = MiniLMEmbedder(backend=args.backend)
    with knowledge_base(args.dsn, embedder=MiniLMEmbedder()) as (dsn, _report):
        check_expected(dsn, cases)
        started = time.monotonic()
        texts = [build_embedding_text(c["query"]) for c in cases]
        vectors = dict(zip([c["id"] for c in cases], embedder.embed(texts)))
        print(f"{len(cases)} cases; query vectors ({args.backend}) in {time.monotonic() - started:.1f}s")
        base = fusion.DEFAULT_CONFIG
        modes = [
            ("vector-only", replace(base, mode=fusion.MODE_VECTOR)),
            ("lexical-only", replace(base, mode=fusion.MODE_LEXICAL)),
            (f"hybrid ({base.fusion}, default)", base),
        ]
        if args.variants:
            other = fusion.FUSION_RRF if base.fusion == fusion.FUSION_WSUM else fusion.FUSION_WSUM
            modes += [
                (f"hybrid ({other})", replace(base, fusion=other)),
                ("hybrid, terms only (no chunk idents)", replace(base, chunk_identifiers=not base.chunk_identifiers)),
                ("lexical, terms only", replace(base, mode=fusion.MODE_LEXICAL, chunk_identifiers=not base.chunk_identifiers)),
            ]
        for w in args.weights or []:
            parts = [float(x) for x in w.split(",")]
            if len(parts) != 4:
                raise SystemExit(f"--weights {w}: give four weights, vector,keys,text,trigram")
            ws = (parts[0], parts[1], parts[2], parts[3])
            modes.append((f"hybrid wsum {w}", replace(base, fusion=fusion.FUSION_WSUM, weights_hybrid=ws)))
        rows, detail = [], {}
        for name, cfg in modes:
            res = await run_mode(dsn, cases, vectors, cfg)
            rows.append((name, summarize(res)))
            detail[name] = res
        if args.variants:
            # the design's reference code: the migration intent also adds "deprecated" and "renamed".
            seed_texts = [
                build_embedding_text(replace(c["query"], prompt_terms=c["query"].prompt_terms + ("deprecated", "renamed")))
                if "migration" in c["query"].prompt_terms
                else t
                for c, t in zip(cases, texts)
            ]
            seed_vectors = dict(zip([c["id"] for c in cases], embedder.embed(seed_texts)))
            for name, cfg in (
                ("vector-only, +deprecated renamed", replace(base, mode=fusion.MODE_VECTOR)),
                ("hybrid, +deprecated renamed", base),
            ):
                res = await run_mode(dsn, cases, seed_vectors, cfg)
                rows.append((name, summarize(res)))
        print_table(rows)
        print("(direct chunks are searched without a query vector, so vector-only finds none of them)")
        if args.misses:
            for r in detail[modes[2][0]]:
                if r["recall5"] < 1:
                    print("miss", r["id"], r["ranks"], [e for e in next(c for c in cases if c["id"] == r["id"])["expect"]])
        if args.json:
            Path(args.json).write_text(json.dumps({"summary": dict(rows), "cases": detail}, indent=1))
        hybrid = dict(rows)[modes[2][0]]
        target = hybrid["renamed_godot3"]["recall5"]
        print(
            f"target: Recall@5 >= 0.95 on chunks using a renamed Godot 3 symbol (hybrid): {target:.3f} "
            f"{'met' if target >= 0.95 else 'NOT met'}"
        )
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dsn", default="", help="use this database (KB built/updated in it) instead of a fresh embedded one")
    p.add_argument("--variants", action="store_true", help="also measure the alternatives behind the defaults")
    p.add_argument("--weights", nargs="*", help="extra hybrid weights 'vector,keys,text,trigram' to measure")
    p.add_argument("--misses", action="store_true", help="list the hybrid misses")
    p.add_argument("--json", help="write per-case results here")
    p.add_argument(
        "--backend",
        default=Settings.embedder_backend,
        choices=EMBEDDER_BACKENDS,
        help="runtime of the query embedder (default: the pipeline's, GODOT_RAG_EMBEDDER_BACKEND's default)",
    )
    return asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
