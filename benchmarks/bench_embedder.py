"""Query embedding speed and agreement of the in-process all-MiniLM-L6-v2 runtimes.

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_embedder.py [--threads 2] [--int8]

Texts are the embedding texts the retriever builds from the sample projects'
chunks (``build_embedding_text`` of each chunk's RetrieverQuery), so lengths are
those the pipeline embeds. For each runtime (sentence-transformers on torch,
ONNX Runtime on the graph exported from the packaged weights, and with
``--int8`` the same graph dynamically quantised to int8) it prints texts/s at
batch 1, 32 and 128, and the cosine agreement with the knowledge base vectors
shipped in the package (computed with torch, stored as float16).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import struct
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from godot_rag.domain.chunking.gdscript import parse_gdscript  # noqa: E402
from godot_rag.domain.retrieval.query import build_embedding_text, build_retriever_query  # noqa: E402
from godot_rag.infra.embedder import MiniLMEmbedder, text_sha256  # noqa: E402
from godot_rag.pipeline.kb import SHIPPED_VECTORS, knowledge_records  # noqa: E402

PROMPT = "Is this Godot 3 or Godot 4, and what is the basis for converting it?"


def chunk_texts() -> list[str]:
    """Every sample chunk's embedding text, twice over in a fixed shuffled order (256 texts)."""
    texts = []
    for folder in ("samples/godot3_project", "samples/godot4_project"):
        for path in sorted((REPO / folder).rglob("*.gd")):
            for chunk in parse_gdscript(path.name, path.read_bytes()).chunks:
                texts.append(build_embedding_text(build_retriever_query(prompt=PROMPT, chunk=chunk)))
    texts = (texts * 3)[:256]
    random.Random(7).shuffle(texts)
    return texts


def shipped_vectors() -> dict[str, np.ndarray]:
    node = resources.files("godot_rag.kb_data").joinpath(SHIPPED_VECTORS)
    with node.open("rb") as raw, gzip.open(raw, "rb") as fh:
        header = json.loads(fh.readline())
        body = fh.read()
    dim = int(header["dim"])
    size = 32 + 2 * dim
    unpack = struct.Struct(f"<{dim}e").unpack_from
    return {body[o : o + 32].hex(): np.asarray(unpack(body, o + 32), dtype=np.float32) for o in range(0, len(body), size)}


def rate(embedder, texts: list[str], batch: int, rounds: int) -> float:
    """texts/s of embedding every text once, ``batch`` texts per embed() call; best of ``rounds``
    (the machine is shared: the best round is the one least disturbed)."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for start in range(0, len(texts), batch):
            embedder.embed(texts[start : start + batch])
        best = min(best, time.perf_counter() - started)
    return len(texts) / best


def agreement(embedder, kb_texts: list[str], shipped: dict[str, np.ndarray]) -> tuple[float, float]:
    """(min, mean) cosine of this runtime's vectors against the shipped KB vectors."""
    got = np.asarray(embedder.embed(kb_texts), dtype=np.float32)
    want = np.stack([shipped[text_sha256(t)] for t in kb_texts])
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    cos = (got * want).sum(axis=1)
    return float(cos.min()), float(cos.mean())


def quantised(embedder: MiniLMEmbedder, folder: Path) -> MiniLMEmbedder:
    """An ONNX embedder on the int8 (dynamic, per-channel weights) copy of the exported graph."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    embedder._load_onnx()
    q = MiniLMEmbedder(backend="onnx", threads=embedder.threads, cache_dir=folder)
    quantize_dynamic(str(embedder.onnx_path()), str(q.onnx_path()), weight_type=QuantType.QInt8, per_channel=True)
    return q


def measure(
    threads: int | None = None, int8: bool = False, batches=(1, 32, 128), rounds: int = 3, kb_sample: int = 2000, echo=print
) -> dict:
    texts = chunk_texts()
    shipped = shipped_vectors()
    kb_texts = sorted({r.embed_text for r in knowledge_records(None) if r.embed_text and text_sha256(r.embed_text) in shipped})
    kb_texts = kb_texts[:: max(1, len(kb_texts) // kb_sample)]
    runtimes = {"torch": MiniLMEmbedder(backend="torch", threads=threads), "onnx": MiniLMEmbedder(backend="onnx", threads=threads)}
    tmp = tempfile.TemporaryDirectory(prefix="godot-rag-int8-")
    if int8:
        runtimes["onnx-int8"] = quantised(runtimes["onnx"], Path(tmp.name))
    out: dict = {
        "texts": len(texts),
        "mean_chars": sum(map(len, texts)) / len(texts),
        "kb_texts": len(kb_texts),
        "threads": threads,
        "runtimes": {},
    }
    for name, emb in runtimes.items():
        t0 = time.perf_counter()
        emb.embed(["warm up"])
        load_s = time.perf_counter() - t0
        row = {"load_s": round(load_s, 2)}
        for b in batches:
            row[f"batch_{b}"] = round(rate(emb, texts, b, rounds), 1)
        lo, mean = agreement(emb, kb_texts, shipped)
        row["cos_min"], row["cos_mean"] = round(lo, 6), round(mean, 6)
        out["runtimes"][name] = row
        echo(
            f"{name:10} load {load_s:5.1f}s  "
            + "  ".join(f"b{b}: {row[f'batch_{b}']:7.1f}/s" for b in batches)
            + f"  cosine vs shipped KB vectors: min {lo:.5f} mean {mean:.5f}"
        )
    tmp.cleanup()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=None, help="intra-op threads (default: the runtime's own)")
    p.add_argument("--int8", action="store_true", help="also measure the int8-quantised ONNX graph")
    p.add_argument("--rounds", type=int, default=3, help="timing rounds, best kept (default 3)")
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    res = measure(args.threads, args.int8, rounds=args.rounds)
    print(f"{res['texts']} chunk texts, mean {res['mean_chars']:.0f} chars; agreement on {res['kb_texts']} KB texts")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
