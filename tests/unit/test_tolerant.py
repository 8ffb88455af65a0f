"""The tolerant parse: GDScript that Godot reads and the grammar does not, made parseable in place."""

from __future__ import annotations

import random

import pytest
from tree_sitter import Parser

from godot_rag.domain.chunking.gdscript import _language
from godot_rag.domain.chunking.tolerant import parse_tolerant, tolerant_source

COMMENTED_BLOCK = b"func f(s):\n\tif s:\n#\t\tx()\n\t\t$a.b = true\n\telse:\n\t\tpass\n"
PARAM_VAR = b"func f(var x: int, y, var z = 3):\n\tpass\n"


@pytest.fixture(scope="module")
def parser() -> Parser:
    return Parser(_language())


@pytest.mark.parametrize(
    "src",
    [
        COMMENTED_BLOCK,
        b"func f(s):\n\tif s:\n\t\tpass\n    #x()\n\telse:\n\t\tpass\n",  # a comment indented with spaces
        b"func f(s):\n\tif s:\n#x()\n\t\t$a.b = true\n\telse:\n\t\tpass\n",  # no indentation after the '#': characters traded
        PARAM_VAR,
        b"static func f(\n\t\tvar a, b = Vector2(1, 2),\n\t\tvar c := 'var, (x)') -> void:\n\tpass\n",
        COMMENTED_BLOCK.replace(b"\n", b"\r\n"),
        b"extends Node\n\nsync func f():\n\tpass\n\nslave var x = 1\n",  # Godot 3's older RPC keywords
    ],
)
def test_the_grammar_fails_and_the_tolerant_parse_does_not(parser: Parser, src: bytes):
    assert parser.parse(src).root_node.has_error
    tree, parsed = parse_tolerant(parser, src)
    assert not tree.root_node.has_error
    assert len(parsed) == len(src) and parsed.count(b"\n") == src.count(b"\n")


def test_offsets_and_code_are_kept(parser: Parser):
    fixed = tolerant_source(COMMENTED_BLOCK)
    assert fixed == b"func f(s):\n\tif s:\n\t\t#x()\n\t\t$a.b = true\n\telse:\n\t\tpass\n"
    assert tolerant_source(PARAM_VAR) == b"func f(    x: int, y,     z = 3):\n\tpass\n"
    # Only comment lines and a parameter's `var` change: every other byte is the source's.
    for src in (COMMENTED_BLOCK, PARAM_VAR):
        for a, b, line in zip(src.split(b"\n"), tolerant_source(src).split(b"\n"), range(99)):
            assert a == b or a.lstrip().startswith(b"#") or b"var" in a, line


def test_a_clean_file_is_parsed_once_as_it_is(parser: Parser):
    src = b"func f():\n\tvar x = 1\n\t# a comment\n\treturn x\n"
    tree, parsed = parse_tolerant(parser, src)
    assert parsed is src and not tree.root_node.has_error


def test_strings_and_multibyte_comments_are_safe():
    # A comment line that may be inside a string keeps its quotes; a cut UTF-8 character becomes spaces.
    src = b'x = """\n#"""\n\t\tpass\n'
    assert tolerant_source(src) == src
    src = "func f():\n\tif a:\n#xé\tb\n\t\tpass\n".encode()
    fixed = tolerant_source(src)
    assert len(fixed) == len(src) and fixed.decode("utf-8")
    # `var` in a string default value or a body is not a parameter's.
    src = b'func f(a = "var x", b = g(var_y)):\n\tvar z = 1\n'
    assert tolerant_source(src) == src


def test_any_input_keeps_its_length_and_lines():
    rng = random.Random(20261203)
    pieces = [b"#", b"\t", b"    ", b"var ", b"func f(", b",", b")", b"\n", b"'", b'"', b"x", b"\xc3\xa9", b"\\", b"\r\n"]
    for _ in range(2000):
        src = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        fixed = tolerant_source(src)
        assert len(fixed) == len(src) and fixed.count(b"\n") == src.count(b"\n")
