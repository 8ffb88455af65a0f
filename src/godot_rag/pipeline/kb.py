"""Building the knowledge base from the shipped data.

``build_kb`` is idempotent: it does nothing when the database already holds
this data version embedded with this model (``kb_versions``), and otherwise
upserts every record and deletes the ones that are gone, in one transaction.

Vectors.  Records with an ``embed_text`` (class records, guide sections,
api_mapping, prototypes: 4,106 texts) get a vector; the ~36,600 member
records of the class references stay lexical-only (see docs/retrieval.md).
A vector is looked up, in order, in the embedding cache table (model,
sha256(text)), in the vectors shipped with the package
(``kb_data/vectors_all-MiniLM-L6-v2.f16.gz``, valid only for the same model
and weights checksum), and only then computed, in batches, each batch stored
in the cache at once so that an interrupted build resumes where it stopped.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import struct
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import psycopg

from godot_rag.domain.retrieval.knowledge import (
    GUIDE_PAGES,
    KB_DATA_VERSION,
    KnowledgeRecord,
    class_reference_names,
    class_reference_records,
    converter_example_records,
    extra_mapping_records,
    guide_records,
    prototype_records,
    read_jsonl,
    read_jsonl_gz,
    read_text,
    rename_records,
)
from godot_rag.infra.embedder import Embedder, text_sha256, vector_literal
from godot_rag.infra.kb_store import cached_shas_sync, kb_version_sync, load_knowledge_sync, put_embeddings_sync

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (phase, done, total)

DATA_FILES = (
    "godot3_class_reference.jsonl.gz",
    "godot4_class_reference.jsonl.gz",
    "godot_renames_3to4.jsonl.gz",
    "godot_converter_examples_3to4.jsonl.gz",
    "api_mapping_extra.jsonl",
    "label_prototypes.jsonl",
)
SHIPPED_VECTORS = "vectors_all-MiniLM-L6-v2.f16.gz"
EMBED_BATCH = 64


def data_version() -> str:
    """KB_DATA_VERSION plus a digest of the shipped data files: edited data rebuilds the KB."""
    digest = hashlib.sha256()
    root = resources.files("godot_rag.kb_data")
    for name in (*DATA_FILES, *GUIDE_PAGES):
        node = root
        for part in name.split("/"):
            node = node.joinpath(part)
        digest.update(name.encode())
        digest.update(node.read_bytes())
    return f"{KB_DATA_VERSION}+{digest.hexdigest()[:12]}"


def knowledge_records(progress: Progress | None = None) -> list[KnowledgeRecord]:
    report = progress or (lambda phase, done, total: None)
    steps = 6
    report("reading the Godot 3.6 class reference", 0, steps)
    g3_rows = list(read_jsonl_gz("godot3_class_reference.jsonl.gz"))
    report("reading the Godot 4.4.1 class reference", 1, steps)
    g4_rows = list(read_jsonl_gz("godot4_class_reference.jsonl.gz"))
    godot3, godot4 = class_reference_names(g3_rows), class_reference_names(g4_rows)
    records = class_reference_records(g3_rows) + class_reference_records(g4_rows)
    report("reading the migration guide and GDScript pages", 2, steps)
    records += guide_records((page, read_text(page)) for page in GUIDE_PAGES)
    report("reading the 3->4 rename pairs and the guide's changes", 3, steps)
    records += rename_records(read_jsonl_gz("godot_renames_3to4.jsonl.gz"), godot3, godot4)
    records += extra_mapping_records(read_jsonl("api_mapping_extra.jsonl"), godot3, godot4)
    report("reading the usage prototypes and converter examples", 4, steps)
    records += prototype_records(read_jsonl("label_prototypes.jsonl"))
    records += converter_example_records(read_jsonl_gz("godot_converter_examples_3to4.jsonl.gz"))
    ids = [(r.table, r.id) for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError("knowledge record ids are not unique")
    report("records ready", 5, steps)
    return records


def model_name(embedder: Embedder | None) -> str:
    return "none" if embedder is None else embedder.name


def kb_is_current(dsn: str, embedder: Embedder | None) -> bool:
    row = kb_version_sync(dsn)
    return row is not None and row.data_version == data_version() and row.embedding_model == model_name(embedder)


# ---------------------------------------------------------------- shipped vectors


def read_shipped_vectors(embedder: Embedder) -> dict[str, str]:
    """sha256(text) -> pgvector literal from the packaged file, or {} when it does not fit the embedder."""
    node = resources.files("godot_rag.kb_data").joinpath(SHIPPED_VECTORS)
    if not node.is_file():
        return {}
    with node.open("rb") as raw, gzip.open(raw, "rb") as fh:
        header = json.loads(fh.readline())
        if header.get("model") != embedder.name:
            return {}
        checksum = embedder.checksum()
        if checksum and header.get("model_sha256") and checksum != header["model_sha256"]:
            log.warning("shipped vectors were made with other %s weights; embedding anew", embedder.name)
            return {}
        dim, count = int(header["dim"]), int(header["count"])
        body = fh.read()
    if hashlib.sha256(body).hexdigest() != header["body_sha256"]:
        raise ValueError(f"kb_data/{SHIPPED_VECTORS} is corrupt (body checksum differs)")
    size = 32 + 2 * dim
    unpack = struct.Struct(f"<{dim}e").unpack_from
    out: dict[str, str] = {}
    for i in range(count):
        off = i * size
        out[body[off : off + 32].hex()] = vector_literal(unpack(body, off + 32))
    return out


def write_shipped_vectors(path: Path, embedder: Embedder, vectors: dict[str, list[float]]) -> dict:
    """Write the packaged vector file: a JSON header line, then per text sha256 (32 bytes) + float16 vector."""
    dim = embedder.dim
    pack = struct.Struct(f"<{dim}e").pack
    body = b"".join(bytes.fromhex(sha) + pack(*vec) for sha, vec in sorted(vectors.items()))
    header = {
        "model": embedder.name,
        "model_sha256": embedder.checksum(),
        "dim": dim,
        "dtype": "float16",
        "count": len(vectors),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "note": "vectors of the embed texts of godot_rag.domain.retrieval.knowledge records, keyed by sha256(text)",
    }
    # mtime=0: the same vectors give the same bytes (no spurious diffs).
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as fh:
        fh.write(json.dumps(header).encode() + b"\n")
        fh.write(body)
    return header


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def ensure_embeddings(dsn: str, embedder: Embedder, texts: dict[str, str], progress: Progress | None = None) -> dict[str, int]:
    """Make every text (sha256 -> text) present in the embedding cache. Returns where they came from."""
    report = progress or (lambda phase, done, total: None)
    stats = {"cached": 0, "shipped": 0, "embedded": 0}
    with psycopg.connect(dsn) as conn:
        have = cached_shas_sync(conn, embedder.name, list(texts))
        stats["cached"] = len(have)
        missing = [sha for sha in texts if sha not in have]
        if missing:
            shipped = read_shipped_vectors(embedder)
            from_file = [(sha, shipped[sha]) for sha in missing if sha in shipped]
            if from_file:
                put_embeddings_sync(conn, embedder.name, from_file)
                stats["shipped"] = len(from_file)
            missing = [sha for sha in missing if sha not in shipped]
        done = 0
        for batch in _batches(missing, EMBED_BATCH):
            report("embedding knowledge records", done, len(missing))
            vectors = embedder.embed([texts[sha] for sha in batch])
            put_embeddings_sync(conn, embedder.name, ((sha, vector_literal(v)) for sha, v in zip(batch, vectors)))
            done += len(batch)
        if missing:
            report("embedding knowledge records", done, len(missing))
        stats["embedded"] = len(missing)
    return stats


def build_kb(
    dsn: str, *, embedder: Embedder | None = None, force: bool = False, progress: Progress | None = None
) -> dict[str, float] | None:
    """Load the KB idempotently; returns record counts (and timings), or None when it was already current."""
    if not force and kb_is_current(dsn, embedder):
        return None
    started = time.monotonic()
    records = knowledge_records(progress)
    version = data_version()
    embed_shas: dict[str, str] = {}
    stats: dict[str, int] = {}
    if embedder is not None:
        texts: dict[str, str] = {}
        for r in records:
            if r.embed_text:
                sha = text_sha256(r.embed_text)
                embed_shas[r.id] = sha
                texts[sha] = r.embed_text
        stats = ensure_embeddings(dsn, embedder, texts, progress)
    counts = load_knowledge_sync(
        dsn,
        records,
        data_version=version,
        embedding_model=model_name(embedder),
        embedding_dim=0 if embedder is None else embedder.dim,
        embed_shas=embed_shas,
        progress=progress,
    )
    elapsed = time.monotonic() - started
    log.info("knowledge base %s (%s) loaded in %.1fs: %s; vectors %s", version, model_name(embedder), elapsed, counts, stats)
    return {**counts, **{f"vectors_{k}": v for k, v in stats.items()}, "seconds": round(elapsed, 1)}


def export_vectors(path: Path, embedder: Embedder, progress: Progress | None = None, *, dsn: str = "") -> dict:
    """Write the shipped vector file for every record's embed text.

    Vectors come from the embedding cache of ``dsn`` when given (a database
    the KB was built in with this embedder), the rest are computed here.
    """
    report = progress or (lambda phase, done, total: None)
    texts = {text_sha256(r.embed_text): r.embed_text for r in knowledge_records(progress) if r.embed_text}
    vectors: dict[str, list[float]] = {}
    if dsn:
        with psycopg.connect(dsn) as conn:
            rows = conn.execute(
                "select text_sha256, embedding::text from godot_rag.embedding_cache where model = %s and text_sha256 = any(%s)",
                (embedder.name, list(texts)),
            ).fetchall()
        vectors = {sha: [float(x) for x in vec.strip("[]").split(",")] for sha, vec in rows}
    missing = sorted(sha for sha in texts if sha not in vectors)
    for n, batch in enumerate(_batches(missing, EMBED_BATCH)):
        report("embedding knowledge records", n * EMBED_BATCH, len(missing))
        for sha, vec in zip(batch, embedder.embed([texts[s] for s in batch])):
            vectors[sha] = vec
    report("embedding knowledge records", len(missing), len(missing))
    return write_shipped_vectors(path, embedder, vectors)
