"""Throughput of parse_gdscript against bare tree-sitter parsing.

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_parser.py [--mb 2] [--rounds 5]

The corpus under tests/corpus/gdscript/ is repeated until it holds at least
``--mb`` megabytes; each file stays a separate parse, as in production.  Each
round times the bare parse and then parse_gdscript back to back (so that load
from other processes hits both alike) and the best round of each is reported,
then the overhead of chunking over the bare parse (target: at most 30 %;
printed, not asserted).  The last line is a one-line summary; the exit status
is 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import tree_sitter_gdscript
from tree_sitter import Language, Parser

from godot_rag.domain.gdscript import parse_gdscript

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus" / "gdscript"
TARGET_OVERHEAD_PERCENT = 30.0


def load_inputs(min_bytes: int) -> list[tuple[str, bytes]]:
    files = [(path.name, path.read_bytes()) for path in sorted(CORPUS.glob("*.gd"))]
    if not files:
        raise SystemExit(f"no .gd files under {CORPUS}")
    inputs: list[tuple[str, bytes]] = []
    total = 0
    while total < min_bytes:
        for name, data in files:
            inputs.append((name, data))
            total += len(data)
    return inputs


def timed(run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.0, help="minimum input size in MB (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds, best one kept (default 5)")
    args = parser.parse_args()

    inputs = load_inputs(int(args.mb * 1_000_000))
    total_bytes = sum(len(data) for _, data in inputs)
    ts_parser = Parser(Language(tree_sitter_gdscript.language()))
    chunk_count = sum(len(parse_gdscript(name, data).chunks) for name, data in inputs)  # also warms up

    def bare() -> None:
        for _, data in inputs:
            ts_parser.parse(data)

    def chunked() -> None:
        for name, data in inputs:
            parse_gdscript(name, data)

    bare_s = full_s = float("inf")
    for _ in range(max(1, args.rounds)):
        bare_s = min(bare_s, timed(bare))
        full_s = min(full_s, timed(chunked))
    mb = total_bytes / 1_000_000
    overhead = (full_s - bare_s) / bare_s * 100
    chunk_rate = chunk_count / full_s
    per_chunk_us = (full_s - bare_s) / chunk_count * 1e6
    met = overhead <= TARGET_OVERHEAD_PERCENT
    print(f"input: {len(inputs)} files, {mb:.2f} MB, {chunk_count} chunks (best of {args.rounds} rounds)")
    print(f"bare tree-sitter parse : {bare_s:7.3f} s  {mb / bare_s:8.2f} MB/s")
    print(f"parse_gdscript         : {full_s:7.3f} s  {mb / full_s:8.2f} MB/s  {chunk_rate:10.0f} chunks/s")
    print(
        f"chunking overhead      : {overhead:7.1f} % over the bare parse, {per_chunk_us:.1f} us per chunk "
        f"(target <= {TARGET_OVERHEAD_PERCENT:.0f} %)"
    )
    verdict = "met" if met else "NOT met"
    print(
        f"summary: bare {mb / bare_s:.2f} MB/s, parse_gdscript {mb / full_s:.2f} MB/s, "
        f"{chunk_rate:.0f} chunks/s, overhead {overhead:.0f} % "
        f"(target <= {TARGET_OVERHEAD_PERCENT:.0f} %: {verdict})"
    )


if __name__ == "__main__":
    main()
