"""Tests of the GDScript AST parser (godot_rag.domain.chunking.gdscript).

The corpus under tests/corpus/gdscript/ drives most of them: every ``.gd``
file there is parsed and compared with its ``<name>.expected.json`` (status,
error lines, and per chunk: id, kind, lines, candidates), and every result is
checked against the parser's invariants by an independent checker here.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from godot_rag.domain.chunking.gdscript import PARSER_VERSION, parse_gdscript
from godot_rag.domain.models import (
    PARSE_EMPTY,
    PARSE_FAILED,
    PARSE_OK,
    PARSE_PARTIAL,
    ChunkingResult,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "gdscript"
CORPUS_FILES = sorted(CORPUS.glob("*.gd"))
SEED001_PLAYER_SHA = "87f4fcf7481dba031f74a363475cee75b81c3d42eb1347b318f6b824e37329a6"
BOM = b"\xef\xbb\xbf"


def check_invariants(result: ChunkingResult, source: bytes) -> None:
    """Everything the parser promises about any result, checked from outside."""
    assert result.source_sha256 == hashlib.sha256(source).hexdigest()
    assert result.source_kind == "gdscript"
    assert result.producer_version == PARSER_VERSION
    if result.status in (PARSE_FAILED, PARSE_EMPTY):
        assert result.chunks == ()
        return
    lines = source.split(b"\n")
    if lines[0].startswith(BOM):
        lines[0] = lines[0][len(BOM) :]
    owner: dict[int, str] = {}
    ids: set[str] = set()
    for expected_order, chunk in enumerate(result.chunks, start=1):
        span = chunk.span
        assert chunk.chunk_order == expected_order
        assert chunk.chunk_id not in ids, chunk.chunk_id
        ids.add(chunk.chunk_id)
        assert chunk.chunk_id == f"{result.source_file}:{chunk.chunk_kind}:{chunk.chunk_id.split(':', 2)[2]}"
        assert source[span.start_byte : span.end_byte].decode("utf-8") == chunk.code_text
        assert 1 <= span.start_line <= span.end_line <= len(lines)
        assert lines[span.start_line - 1].strip(), f"{chunk.chunk_id} starts on a blank line"
        assert lines[span.end_line - 1].strip(), f"{chunk.chunk_id} ends on a blank line"
        assert chunk.code_text.count("\n") == span.end_line - span.start_line
        assert not chunk.code_text.endswith("\r")
        for line in range(span.start_line, span.end_line + 1):
            assert line not in owner, f"line {line} in {owner.get(line)} and {chunk.chunk_id}"
            owner[line] = chunk.chunk_id
        # The mask keeps code characters and line breaks, blanks the rest.
        assert len(chunk.code_mask) == len(chunk.code_text)
        for text_char, mask_char in zip(chunk.code_text, chunk.code_mask):
            assert mask_char == text_char or (mask_char == " " and text_char not in "\r\n")
    for number, line in enumerate(lines, start=1):
        if line.strip():
            assert number in owner, f"non-blank line {number} belongs to no chunk"


def load_expected(path: Path) -> dict:
    return json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))


def summary(result: ChunkingResult) -> list[dict]:
    return [
        {
            "chunk_id": c.chunk_id,
            "chunk_kind": c.chunk_kind,
            "start_line": c.span.start_line,
            "end_line": c.span.end_line,
            "symbol_candidates": list(c.symbol_candidates),
            "api_call_candidates": list(c.api_call_candidates),
            "reference_candidates": list(c.reference_candidates),
        }
        for c in result.chunks
    ]


def parse_corpus(name: str) -> tuple[ChunkingResult, bytes]:
    source = (CORPUS / name).read_bytes()
    return parse_gdscript(name, source), source


def by_id(result: ChunkingResult, chunk_id: str):
    return next(c for c in result.chunks if c.chunk_id == chunk_id)


# --------------------------------------------------------------------- corpus


def test_corpus_is_present() -> None:
    assert len(CORPUS_FILES) >= 15
    for path in CORPUS_FILES:
        assert path.with_suffix(".expected.json").exists(), path.name


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_file_matches_expected(path: Path) -> None:
    source = path.read_bytes()
    expected = load_expected(path)
    result = parse_gdscript(path.name, source)
    check_invariants(result, source)
    assert result.status == expected["status"]
    assert [e.line for e in result.errors] == expected.get("error_lines", [])
    assert summary(result) == expected["chunks"]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_file_is_deterministic(path: Path) -> None:
    source = path.read_bytes()
    assert parse_gdscript(path.name, source) == parse_gdscript(path.name, bytes(source))


# ---------------------------------------------------------------- seed 000/001


def test_seed000_player_spans() -> None:
    result, _ = parse_corpus("seed000_player.gd")
    assert [(c.chunk_kind, c.span.start_line, c.span.end_line) for c in result.chunks] == [
        ("class_extends", 1, 1),
        ("signal", 3, 3),
        ("variable", 5, 6),
        ("function", 8, 10),
        ("function", 12, 26),
        ("function", 28, 31),
    ]
    process = by_id(result, "seed000_player.gd:function:_process")
    assert process.code_text.startswith("func _process(delta):\n\tvar velocity = Vector2.ZERO\n")
    assert process.code_text.endswith("\tposition = position.clamp(Vector2.ZERO, screen_size)")
    variables = by_id(result, "seed000_player.gd:variable:speed")
    assert variables.code_text == "@export var speed = 400\nvar screen_size"


def test_seed000_enemy_spans() -> None:
    result, _ = parse_corpus("seed000_enemy.gd")
    assert [(c.chunk_id, c.span.start_line, c.span.end_line) for c in result.chunks] == [
        ("seed000_enemy.gd:class_extends:1", 1, 1),
        ("seed000_enemy.gd:variable:velocity", 3, 3),
        ("seed000_enemy.gd:function:_physics_process", 5, 6),
    ]
    assert result.chunks[0].code_text == "extends KinematicBody2D"
    assert result.chunks[0].symbol_candidates == ("KinematicBody2D",)
    assert result.chunks[2].api_call_candidates == ("move_and_slide",)


def test_seed001_player_candidates_match_the_retriever_query() -> None:
    result, source = parse_corpus("seed001_player.gd")
    assert result.source_sha256 == SEED001_PLAYER_SHA
    process = by_id(result, "seed001_player.gd:function:_process")
    assert process.symbol_candidates == ("Vector2", "AnimatedSprite2D")
    assert process.api_call_candidates == (
        "Input.is_action_pressed",
        "Vector2.ZERO",
        "velocity.normalized",
        "position.clamp",
    )
    # The seed's query_text: api candidates, symbols, chunk name, prompt terms.
    query = " ".join([*process.api_call_candidates, *process.symbol_candidates, process.name])
    assert query + " Godot 3 Godot 4 migration" == (
        "Input.is_action_pressed Vector2.ZERO velocity.normalized position.clamp "
        "Vector2 AnimatedSprite2D _process Godot 3 Godot 4 migration"
    )
    hit = by_id(result, "seed001_player.gd:function:_on_body_entered")
    assert hit.api_call_candidates == ("hit.emit", "set_deferred")
    assert by_id(result, "seed001_player.gd:class_extends:1").symbol_candidates == ("Area2D",)
    assert by_id(result, "seed001_player.gd:signal:hit").symbol_candidates == ("hit",)
    assert by_id(result, "seed001_player.gd:variable:speed").symbol_candidates[:2] == ("@export", "speed")


def test_seed001_player_with_expected_sha() -> None:
    source = (CORPUS / "seed001_player.gd").read_bytes()
    result = parse_gdscript("player.gd", source, expected_sha256=SEED001_PLAYER_SHA)
    assert result.status == PARSE_OK
    assert [c.chunk_id for c in result.chunks] == [
        "player.gd:class_extends:1",
        "player.gd:signal:hit",
        "player.gd:variable:speed",
        "player.gd:function:_ready",
        "player.gd:function:_process",
        "player.gd:function:start",
        "player.gd:function:_on_body_entered",
    ]


def test_surrounding_context_holds_header_and_used_members_only() -> None:
    result, _ = parse_corpus("seed001_player.gd")
    process = by_id(result, "seed001_player.gd:function:_process")
    assert process.surrounding_context.split("\n") == [
        "extends Area2D",
        "@export var speed = 400 # How fast the player will move (pixels/sec).",
        "var screen_size # Size of the game window.",
    ]
    hit = by_id(result, "seed001_player.gd:function:_on_body_entered")
    assert hit.surrounding_context == "extends Area2D\nsignal hit"
    assert by_id(result, "seed001_player.gd:function:start").surrounding_context == "extends Area2D"
    assert by_id(result, "seed001_player.gd:class_extends:1").surrounding_context == ""


def test_inner_class_context_includes_enclosing_headers() -> None:
    result, _ = parse_corpus("inner_classes.gd")
    push = by_id(result, "inner_classes.gd:function:Item.Stack.push")
    assert push.name == "Item.Stack.push"
    assert push.surrounding_context.split("\n") == [
        "extends Node",
        "class Item extends Resource:",
        "\tclass Stack:",
        "\t\tvar items: Array[Item] = []",
    ]


def test_source_file_with_directory_prefixes_ids() -> None:
    source = (CORPUS / "seed000_enemy.gd").read_bytes()
    result = parse_gdscript("scripts/enemy.gd", source)
    assert result.source_file == "scripts/enemy.gd"
    assert all(c.chunk_id.startswith("scripts/enemy.gd:") for c in result.chunks)


# ----------------------------------------------------------- masks and strings


def test_comments_and_strings_never_become_candidates() -> None:
    source = (
        b"extends Node\n\n"
        b"func f():\n"
        b"\t# yield(get_tree(), 'idle_frame') and KinematicBody2D\n"
        b'\tvar s = "KinematicBody2D.new() yield( move_and_slide("\n'
        b'\tvar n = &"Sprite"\n'
        b'\tvar p = preload("res://enemy.tscn")  # res://not_a_reference.tscn\n'
        b"\tvar q = load('relative/level.tres')\n"
    )
    result = parse_gdscript("f.gd", source)
    check_invariants(result, source)
    f = by_id(result, "f.gd:function:f")
    assert f.symbol_candidates == ()
    assert f.api_call_candidates == ()
    assert f.reference_candidates == ("res://enemy.tscn", "relative/level.tres")
    assert "KinematicBody2D" not in f.code_mask
    assert "yield" not in f.code_mask
    assert 'preload("                ")' in f.code_mask
    assert '&"      "' in f.code_mask


def test_code_mask_keeps_length_with_non_ascii() -> None:
    result, source = parse_corpus("unicode.gd")
    check_invariants(result, source)
    const = by_id(result, "unicode.gd:const:GREETING")
    assert "世界" in const.code_text and "世界" not in const.code_mask
    blank_body = " " * len("Olá, 世界 🌍 KinematicBody2D")
    assert const.code_mask.endswith('const GREETING = "' + blank_body + '"')


def test_node_paths_and_node_path_literals_are_references() -> None:
    source = (
        b"extends Node\n\n"
        b"func f():\n"
        b"\t$Sprite2D.show()\n"
        b'\t$"UI/Health Bar".value = 1\n'
        b"\t%Unique.hide()\n"
        b'\tget_node("Path/To/Timer").start()\n'
        b'\tvar p = ^"A/B"\n'
    )
    result = parse_gdscript("n.gd", source)
    check_invariants(result, source)
    f = by_id(result, "n.gd:function:f")
    assert f.reference_candidates == ("$Sprite2D", '$"UI/Health Bar"', "%Unique", "Path/To/Timer", '^"A/B"')
    assert f.symbol_candidates == ("Sprite2D", "Timer")
    assert f.api_call_candidates == ()
    assert '$"             "' in f.code_mask


def test_api_rules() -> None:
    source = (
        b"extends Node\n\n"
        b"func f(body):\n"
        b"\tvar v = Vector2(1, 2)\n"
        b"\tv = v.length() + v.x\n"
        b'\tbody.connect("hit", self, "_on_hit")\n'
        b'\tself.set_deferred("monitoring", false)\n'
        b'\tget_tree().change_scene("res://menu.tscn")\n'
        b'\tpreload("res://b.tscn").instance()\n'
        b"\tOS.get_ticks_msec()\n"
        b"\tEngine.editor_hint\n"
        b"\thide()\n"
        b'\tyield(get_tree(), "idle_frame")\n'
    )
    result = parse_gdscript("a.gd", source)
    check_invariants(result, source)
    f = by_id(result, "a.gd:function:f")
    assert f.api_call_candidates == (
        "OS.get_ticks_msec",
        "Engine.editor_hint",
        "body.connect",
        "get_tree().change_scene",
        "set_deferred",
        "instance",
        "yield",
    )
    assert f.symbol_candidates == ("Vector2",)
    assert f.reference_candidates == ("res://menu.tscn", "res://b.tscn")


# ------------------------------------------------------------------ line ends


def test_crlf_spans_are_exact() -> None:
    result, source = parse_corpus("crlf.gd")
    check_invariants(result, source)
    ready = by_id(result, "crlf.gd:function:_ready")
    assert ready.code_text == 'func _ready():\r\n\tcount += 1\r\n\temit_signal("ping")'
    assert source[ready.span.end_byte : ready.span.end_byte + 2] == b"\r\n"


def test_bom_is_not_part_of_the_first_chunk() -> None:
    result, source = parse_corpus("bom_spaces.gd")
    assert source.startswith(BOM)
    first = result.chunks[0]
    assert first.span.start_byte == 3
    assert first.code_text == "extends Node"


def test_mixed_tabs_and_spaces_never_crash() -> None:
    source = b"extends Node\n\nfunc f():\n\tvar a = 1\n        var b = 2\n \tvar c = 3\n\nfunc g():\n    pass\n"
    result = parse_gdscript("mixed.gd", source)
    assert result.status in (PARSE_OK, PARSE_PARTIAL)
    check_invariants(result, source)
    assert result.chunks[-1].chunk_id == "mixed.gd:function:g"


# ------------------------------------------------------------------ bad input


def test_invalid_utf8_names_the_offset() -> None:
    source = b'extends Node\nvar s = "caf\xe9"\n'
    result = parse_gdscript("bad.gd", source)
    check_invariants(result, source)
    assert result.status == PARSE_FAILED
    assert result.chunks == ()
    assert "invalid UTF-8 at byte offset 25" in result.errors[0].message
    assert result.errors[0].line == 2


def test_nul_bytes_are_binary_content() -> None:
    source = b"extends Node\n\x00\x01\x02"
    result = parse_gdscript("bin.gd", source)
    check_invariants(result, source)
    assert result.status == PARSE_FAILED
    assert "binary content" in result.errors[0].message


def test_oversize_file_fails_with_sizes() -> None:
    source = b"extends Node\n" * 10
    result = parse_gdscript("big.gd", source, max_bytes=50)
    check_invariants(result, source)
    assert result.status == PARSE_FAILED
    assert result.errors[0].message == f"file is {len(source)} bytes, over the limit of 50"


def test_sha_mismatch_fails_without_chunks() -> None:
    source = b"extends Node\n"
    result = parse_gdscript("s.gd", source, expected_sha256="0" * 64)
    check_invariants(result, source)
    assert result.status == PARSE_FAILED
    assert result.chunks == ()
    assert "sha256 mismatch" in result.errors[0].message
    good = parse_gdscript("s.gd", source, expected_sha256=hashlib.sha256(source).hexdigest())
    assert good.status == PARSE_OK


@pytest.mark.parametrize("source", [b"", b"   \n\t\n\r\n", BOM, BOM + b"\n\n"])
def test_empty_and_whitespace_files(source: bytes) -> None:
    result = parse_gdscript("e.gd", source)
    check_invariants(result, source)
    assert result.status == PARSE_EMPTY
    assert result.chunks == ()


def test_fifty_thousand_character_line() -> None:
    source = b'extends Node\n\nconst DATA = "' + b"x" * 50_000 + b'"\n\nfunc f():\n\treturn DATA.length()\n'
    result = parse_gdscript("long.gd", source)
    check_invariants(result, source)
    assert result.status == PARSE_OK
    assert [c.chunk_id for c in result.chunks] == [
        "long.gd:class_extends:1",
        "long.gd:const:DATA",
        "long.gd:function:f",
    ]


def test_syntax_errors_report_positions_and_keep_chunks() -> None:
    result, source = parse_corpus("syntax_errors.gd")
    check_invariants(result, source)
    assert result.status == PARSE_PARTIAL
    first = result.errors[0]
    assert (first.line, first.column) == (5, 1)
    assert "func broken" in first.message
    kinds = {c.chunk_id: c.node_kind for c in result.chunks}
    assert kinds["syntax_errors.gd:function:broken"] == "ERROR"
    assert kinds["syntax_errors.gd:function:fine_after"] == "function_definition"


def test_unicode_node_path_is_a_clear_partial() -> None:
    # The grammar rejects non-ASCII characters after `$`; the column counts characters.
    source = "extends Node\n\nfunc f():\n\t$Ícone.hide()\n".encode()
    result = parse_gdscript("u.gd", source)
    check_invariants(result, source)
    assert result.status == PARSE_PARTIAL
    assert (result.errors[0].line, result.errors[0].column) == (4, 3)


def test_mangled_corpus_files_keep_invariants() -> None:
    # Deleting or duplicating random lines produces all sorts of broken files;
    # none may crash or break an invariant.
    rng = random.Random(20260627)
    for path in CORPUS_FILES:
        lines = path.read_bytes().split(b"\n")
        for _ in range(4):
            mangled = list(lines)
            for _ in range(rng.randint(1, 4)):
                index = rng.randrange(len(mangled))
                if rng.random() < 0.5:
                    del mangled[index]
                else:
                    mangled.insert(index, mangled[rng.randrange(len(mangled))][: rng.randint(0, 12)])
            source = b"\n".join(mangled)
            result = parse_gdscript(path.name, source)
            check_invariants(result, source)
            assert result == parse_gdscript(path.name, source)


def test_garbage_text_never_crashes() -> None:
    rng = random.Random(7)
    alphabet = "func var ( ) [ ] { } : \n\t $ % @ \" ' # = . , x y 1 2 class extends é 世"
    for _ in range(40):
        source = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300))).encode()
        result = parse_gdscript("g.gd", source)
        check_invariants(result, source)


_SUBPROCESS_CODE = """
import hashlib, pathlib, sys
import godot_rag.domain.chunking.gdscript as g
assert g._language.cache_info().currsize == 0, "Language built at import"
assert g._query.cache_info().currsize == 0, "Query built at import"
digest = hashlib.sha256()
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.gd")):
    digest.update(repr(g.parse_gdscript(path.name, path.read_bytes())).encode())
print(digest.hexdigest())
"""


def test_lazy_import_and_same_output_across_processes() -> None:
    # Different hash seeds change set and dict-of-str iteration order in
    # other programs; the output must not depend on it.
    src_dir = Path(__file__).resolve().parents[2] / "src"
    digests = []
    for seed in ("1", "2"):
        completed = subprocess.run(
            [sys.executable, "-c", _SUBPROCESS_CODE, str(CORPUS)],
            env={"PYTHONPATH": str(src_dir), "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr
        digests.append(completed.stdout.strip())
    assert digests[0] == digests[1]


def test_grouping_rules() -> None:
    source = b"class_name Foo\nextends Node\nsignal a\nsignal b(x: int)\nconst C = 1\nvar x\n@export var y := 2\n\nvar z\n"
    result = parse_gdscript("g.gd", source)
    check_invariants(result, source)
    assert [(c.chunk_id, c.span.start_line, c.span.end_line, c.node_kind) for c in result.chunks] == [
        ("g.gd:class_name:Foo", 1, 1, "class_name_statement"),
        ("g.gd:class_extends:1", 2, 2, "extends_statement"),
        ("g.gd:signal:a", 3, 4, "signal_statement"),
        ("g.gd:const:C", 5, 5, "const_statement"),
        ("g.gd:variable:x", 6, 7, "variable_statement"),
        ("g.gd:variable:z", 9, 9, "variable_statement"),
    ]
    assert result.chunks[2].symbol_candidates == ("a", "b")
    assert result.chunks[4].symbol_candidates == ("x", "@export", "y")


@pytest.mark.parametrize(
    ("first_line", "symbol", "node_kind"),
    [(b"tool", "tool", "expression_statement"), (b"@tool", "@tool", "annotation")],
)
def test_tool_forms(first_line: bytes, symbol: str, node_kind: str) -> None:
    source = first_line + b"\nextends EditorPlugin\n"
    result = parse_gdscript("t.gd", source)
    check_invariants(result, source)
    tool = result.chunks[0]
    assert (tool.chunk_id, tool.symbol_candidates, tool.node_kind) == ("t.gd:tool:1", (symbol,), node_kind)
    assert tool.surrounding_context == ""


def test_comment_attachment() -> None:
    source = (
        b"extends Node\n"
        b"var a = 1\n"
        b"# note on a\n"
        b"\n"
        b"# detached block\n"
        b"\n"
        b"# leading comment of f\n"
        b"@rpc\n"
        b"func f():\n"
        b"\tpass\n"
        b"\n"
        b"# trailing comment at the end\n"
    )
    result = parse_gdscript("c.gd", source)
    check_invariants(result, source)
    spans = {c.chunk_id: (c.span.start_line, c.span.end_line) for c in result.chunks}
    assert spans == {"c.gd:class_extends:1": (1, 1), "c.gd:variable:a": (2, 3), "c.gd:function:f": (5, 12)}
    assert by_id(result, "c.gd:function:f").symbol_candidates == ("@rpc",)
