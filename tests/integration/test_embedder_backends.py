"""The runtimes of the in-process all-MiniLM-L6-v2 give the same vectors (int8: nearly).

Query vectors of either must be comparable with the knowledge base vectors
shipped in the package (made with torch), so ONNX Runtime is checked against
torch and against the shipped file, on chunk-like texts of mixed lengths
embedded in one batch (padding must not change a vector).
"""

from __future__ import annotations

import gzip
import json
import struct
from importlib import resources

import numpy as np
import pytest

from godot_rag.infra.embedder import MiniLMEmbedder, text_sha256
from godot_rag.pipeline.kb import SHIPPED_VECTORS, knowledge_records

pytestmark = pytest.mark.integration

TEXTS = [
    "extends KinematicBody2D",
    "func _physics_process(delta):\n\tvelocity = move_and_slide(velocity, Vector2.UP)\n\tif is_on_floor():\n\t\tjumps = 0",
    '[node name="Player" type="KinematicBody2D"]\nscript = ExtResource( 1 )',
    "uid://dejexgb3lr1mk",
    'yield(get_tree().create_timer(1.0), "timeout") ' * 40,  # past the 256-token truncation
]


@pytest.fixture(scope="module")
def runtimes(tmp_path_factory):
    cache = tmp_path_factory.mktemp("models")
    return MiniLMEmbedder(backend="torch"), MiniLMEmbedder(backend="onnx", cache_dir=cache)


@pytest.fixture(scope="module")
def int8(tmp_path_factory):
    return MiniLMEmbedder(backend="onnx-int8", cache_dir=tmp_path_factory.mktemp("models-int8"))


def test_onnx_matches_torch_in_one_padded_batch(runtimes):
    torch_e, onnx_e = runtimes
    a = np.asarray(torch_e.embed(TEXTS))
    b = np.asarray(onnx_e.embed(TEXTS))
    assert onnx_e.onnx_path().is_file(), "the exported graph is cached where the embedder said"
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-4)
    assert (a * b).sum(axis=1).min() > 0.9999
    # One at a time gives what the batch gave.
    single = np.asarray([onnx_e.embed([t])[0] for t in TEXTS])
    assert (single * b).sum(axis=1).min() > 0.9999


def test_onnx_agrees_with_the_shipped_knowledge_base_vectors(runtimes):
    _, onnx_e = runtimes
    node = resources.files("godot_rag.kb_data").joinpath(SHIPPED_VECTORS)
    with node.open("rb") as raw, gzip.open(raw, "rb") as fh:
        header = json.loads(fh.readline())
        body = fh.read()
    dim = int(header["dim"])
    size = 32 + 2 * dim
    shipped = {body[o : o + 32].hex(): o for o in range(0, len(body), size)}
    texts = sorted({r.embed_text for r in knowledge_records(None) if r.embed_text and text_sha256(r.embed_text) in shipped})[::40]
    assert len(texts) > 50
    got = np.asarray(onnx_e.embed(texts))
    want = np.asarray([struct.unpack_from(f"<{dim}e", body, shipped[text_sha256(t)] + 32) for t in texts], dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert (got * want).sum(axis=1).min() > 0.999


def test_int8_stays_close_to_float32_and_keeps_the_neighbours(runtimes, int8):
    """Quantised query vectors are compared with float32 knowledge-base vectors: each must stay
    close to its float32 twin, and the nearest of a set of texts must stay the nearest."""
    _, onnx_e = runtimes
    texts = TEXTS + [
        'func _ready():\n\tyield(get_tree(), "idle_frame")',
        "await get_tree().process_frame",
        "var tween = create_tween()",
        "export(int) var speed = 200",
        "@export var speed: int = 200",
    ]
    full = np.asarray(onnx_e.embed(texts))
    quant = np.asarray(int8.embed(texts))
    assert int8.onnx_int8_path().is_file(), "the quantised graph is cached where the embedder said"
    assert int8.onnx_int8_path().stat().st_size < int8.onnx_path().stat().st_size / 2
    assert np.allclose(np.linalg.norm(quant, axis=1), 1.0, atol=1e-4)
    assert (full * quant).sum(axis=1).min() > 0.985
    # Every quantised vector's nearest float32 vector is its own text's.
    assert list(np.argmax(quant @ full.T, axis=1)) == list(range(len(texts)))


def test_an_int8_vector_does_not_depend_on_its_batch(int8):
    """Activations are quantised per call: each text must run alone, or its vector would change with its neighbours."""
    together = np.asarray(int8.embed(TEXTS))
    alone = np.asarray([int8.embed([t])[0] for t in TEXTS])
    assert np.array_equal(together, alone)
