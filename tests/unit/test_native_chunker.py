"""The native GDScript chunker (godot_rag._gdchunk) against the Python reference.

``parse_gdscript`` hands every file it can to the C fast path
(native/gdchunk.c) and the rest to the Python implementation.  Both must give
the same chunks, byte for byte: these tests compare them on the corpus, the
sample projects and a few thousand seeded mutations of them (lines deleted,
swapped, re-indented, cut mid-line; snippets of both Godot versions, comments
and strings with non-ASCII text inserted), and check the cases the fast path
leaves to Python.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import random
from pathlib import Path

import pytest

from godot_rag.domain import native_chunker
from godot_rag.domain.gdscript import parse_gdscript
from godot_rag.domain.models import PARSE_EMPTY, PARSE_FAILED, PARSE_OK, PARSE_PARTIAL, Chunk

REPO = Path(__file__).resolve().parents[2]
CORPUS_FILES = sorted((REPO / "tests" / "corpus" / "gdscript").glob("*.gd"))
SAMPLE_FILES = sorted((REPO / "samples").rglob("*.gd"))
BOM = b"\xef\xbb\xbf"

# Inserted by the mutations: features of both versions, comments and strings
# holding code-like and non-ASCII text, broken lines.
SNIPPETS = [
    "# comment yield(KinematicBody2D)\n",
    '\tvar x = "res://a.tscn" # x\n',
    "export(int) var speed = 4 setget set_speed\n",
    "@export var hp: int = 3\n",
    "@onready var s = $Sprite2D\n",
    'onready var t = get_node("Timer")\n',
    "signal hit(damage)\n",
    "enum State {IDLE, RUN}\n",
    "enum {A, B}\n",
    "const MAX = 10\n",
    "class_name Foo\n",
    "class Inner extends Node:\n\tvar a = 1\n\tfunc f():\n\t\treturn a\n",
    'func g():\n\tyield(get_tree(), "idle_frame")\n',
    "func h():\n\tawait get_tree().process_frame\n\t.h()\n",
    "static func s(a: Array[int]) -> Dictionary:\n\treturn {}\n",
    "\t$AnimatedSprite2D.play()\n",
    '\tvar p = preload("res://x.gd").instance()\n',
    '\tInput.is_action_pressed("ui_left")\n',
    "\tvelocity = move_and_slide(velocity, Vector2.UP)\n",
    "#region R\n",
    "#endregion\n",
    "@rpc\n",
    "tool\n",
    "@tool\n",
    '\tvar n = ^"A/B" + &"name" + %Unique.name\n',
    '\tprint("é ü 世界 😀") # ü\n',
    "# ünïcödé\n",
    "\n",
    "\n\n",
    "\tmatch x:\n\t\t1:\n\t\t\tpass\n",
    "\tvar l = func(a): return a * 2\n",
    "remote func r():\n\tpass\n",
    "var v = Vector2.ZERO\nvar w = 2\n",
    "func _init():\n\tpass\n",
    "\tsuper._ready()\n",
    '\tself.connect("a", self, "b")\n',
    '\tget_tree().change_scene("res://m.tscn")\n',
    '\temit_signal("hit")\n',
    "\tx.y.z.w(1)\n",
    "\tf(a)(b).c()\n",
    '\tvar q = """multi\nline"""\n',
    'extends "res://base.gd"\n',
    "extends Node2D\n",
    '\tvar d = {"a": 1,\n\t\t"b": 2}\n',
    "\tArray [ int , float ]\n",
    "var arr: Array[Node] = []\n",
    "\tState.IDLE\n",
    "\tBullet.instance()\n",
    '\t$"Path/To Node".show()\n',
    '\tvar r = r"raw\\d"\n',
    "   \n",
    "\t# indented comment\n",
    "class_name Bar extends Node\n",
    "\tvar café = 1\n",
    "func ñ():\n\tpass\n",
    "\treturn .base_method()\n",
    "\tvar s = 'single' + \"double\"\n",
]


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if op < 0.3 and lines:
            del lines[rng.randrange(len(lines))]
        elif op < 0.6:
            lines.insert(rng.randint(0, len(lines)), rng.choice(SNIPPETS))
        elif op < 0.7 and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op < 0.8 and lines:
            i = rng.randrange(len(lines))
            lines[i] = "\t" + lines[i]
        elif op < 0.85 and lines:
            i = rng.randrange(len(lines))
            lines[i] = lines[i].lstrip("\t ")
        elif op < 0.9 and lines:
            i = rng.randrange(len(lines))
            cut = rng.randrange(max(1, len(lines[i])))
            lines[i] = lines[i][:cut] + lines[i][cut + 1 :]
        else:
            lines.append(rng.choice(SNIPPETS))
    out = "".join(lines)
    if rng.random() < 0.05:
        out = out.replace("\n", "\r\n")
    if rng.random() < 0.03:
        out = "\ufeff" + out
    return out


def _body_start(data: bytes) -> int:
    return len(BOM) if data.startswith(BOM) else 0


def _assert_same(name: str, data: bytes) -> str | None:
    """Compare both implementations on one file; return the fallback reason, if any."""
    outcome = native_chunker.chunk_or_reason(name, data, _body_start(data))
    if isinstance(outcome, str):
        return outcome
    reference = parse_gdscript(name, data, native=False)
    assert reference.status == PARSE_OK, f"{name}: native chunked a file the reference finds {reference.status}"
    assert len(outcome) == len(reference.chunks), name
    for native, expected in zip(outcome, reference.chunks, strict=True):
        assert native == expected, f"{name}: {expected.chunk_id} differs"
    return None


def test_native_extension_is_built() -> None:
    # An installed tree must have the fast path: without it every file takes
    # the Python path (same output, several times slower).
    assert native_chunker.available()


@pytest.mark.parametrize("path", CORPUS_FILES + SAMPLE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_native_matches_reference_on_corpus_and_samples(path: Path) -> None:
    data = path.read_bytes()
    reason = _assert_same(path.name, data)
    if path.name == "syntax_errors.gd":
        assert reason == "syntax errors"
    else:
        # Every other file here must take the fast path, or this test proves nothing.
        assert reason is None, f"{path.name} left to Python: {reason}"


def test_native_matches_reference_on_mutations() -> None:
    rng = random.Random(20261129)
    bases = [p.read_text(encoding="utf-8-sig") for p in CORPUS_FILES + SAMPLE_FILES]
    native_count = 0
    reasons: dict[str, int] = {}
    for index in range(1500):
        data = _mutate(rng, rng.choice(bases)).encode("utf-8")
        if not data[_body_start(data) :].strip():
            continue
        reason = _assert_same(f"m{index}.gd", data)
        if reason is None:
            native_count += 1
        else:
            reasons[reason] = reasons.get(reason, 0) + 1
    # Most mutations still parse: the comparison covered the fast path.
    assert native_count > 1000, (native_count, reasons)
    assert set(reasons) <= {"syntax errors", "code outside comments and strings is not ASCII"}


def test_parse_gdscript_results_are_identical_both_ways() -> None:
    for path in CORPUS_FILES + SAMPLE_FILES:
        data = path.read_bytes()
        assert parse_gdscript(path.name, data) == parse_gdscript(path.name, data, native=False), path.name


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"extends Node\x00\n", PARSE_FAILED),
        (b"extends Node\n# \xff\xfe\n", PARSE_FAILED),
        (b"extends Node\n# \xed\xa0\x80 surrogate\n", PARSE_FAILED),
        (b"extends Node\n# \xc0\xaf overlong\n", PARSE_FAILED),
        (b"extends Node\n# \xf4\x90\x80\x80 past U+10FFFF\n", PARSE_FAILED),
        (b" \t\r\n\n", PARSE_EMPTY),
        (BOM + b"\n\n", PARSE_EMPTY),
        (b"func f(:\n\tpass\n", PARSE_PARTIAL),
    ],
)
def test_fast_path_leaves_bad_input_to_python(data: bytes, status: str) -> None:
    assert native_chunker.parse("bad.gd", data, hashlib.sha256(data).hexdigest()) is None
    result = parse_gdscript("bad.gd", data)
    assert result.status == status
    assert result == parse_gdscript("bad.gd", data, native=False)


def test_utf8_validation_agrees_with_python_on_random_bytes() -> None:
    rng = random.Random(7)
    alphabet = [b"a", b"\n", b"#", b'"', b"\xc3\xa9", b"\xe4\xb8\x96", b"\xf0\x9f\x98\x80"]
    for _ in range(3000):
        data = b"extends Node\n#" + b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        if rng.random() < 0.5:
            cut = rng.randrange(len(data))
            data = data[:cut] + bytes([rng.randrange(0x80, 0x100)]) + data[cut + 1 :]
        try:
            data.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        fast = native_chunker.parse("r.gd", data, hashlib.sha256(data).hexdigest())
        if not valid:
            assert fast is None, data
        elif fast is not None:
            assert fast == parse_gdscript("r.gd", data, native=False)


def test_non_ascii_code_goes_to_python_with_the_same_result() -> None:
    data = "extends Node\n\nvar café = 1\n\nfunc _ready():\n\tprint(café)\n".encode()
    outcome = native_chunker.chunk_or_reason("u.gd", data, 0)
    reference = parse_gdscript("u.gd", data, native=False)
    if isinstance(outcome, str):
        assert outcome in ("code outside comments and strings is not ASCII", "syntax errors")
    else:
        assert outcome == reference.chunks
    assert parse_gdscript("u.gd", data) == reference


def test_chunks_built_in_c_behave_like_dataclass_instances() -> None:
    data = (REPO / "tests" / "corpus" / "gdscript" / "godot3_player.gd").read_bytes()
    result = parse_gdscript("p.gd", data)
    reference = parse_gdscript("p.gd", data, native=False)
    chunk = result.chunks[1]
    assert isinstance(chunk, Chunk)
    assert dataclasses.asdict(chunk) == dataclasses.asdict(reference.chunks[1])
    assert hash(chunk) == hash(reference.chunks[1])
    assert repr(chunk) == repr(reference.chunks[1])
    assert pickle.loads(pickle.dumps(result)) == result
    with pytest.raises(dataclasses.FrozenInstanceError):
        chunk.name = "other"  # type: ignore[misc]
    assert dataclasses.replace(chunk, name="x").name == "x"


def test_deep_nesting_and_long_lines_do_not_crash() -> None:
    # The capture walk keeps its own stack: nesting depth is bounded by
    # memory, not by the C stack.
    deep = b"var x = " + b"(" * 20000 + b"1" + b")" * 20000 + b"\n"
    long_line = b"var s = [" + b"1, " * 20000 + b"1]\n"
    for data in (deep, long_line, b"extends Node\n" + long_line * 3):
        result = parse_gdscript("deep.gd", data)
        assert result == parse_gdscript("deep.gd", data, native=False)


def test_vendored_runtime_is_the_pinned_tree_sitter_release() -> None:
    # native/tree-sitter is linked into the chunker while py-tree-sitter's own
    # copy parses in the Python path: both must be the same release.
    from importlib.metadata import version

    vendored = (REPO / "native" / "tree-sitter" / "VERSION").read_text().strip()
    assert vendored == version("tree-sitter")
