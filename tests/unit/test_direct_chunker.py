"""Direct chunker: file-driven corpus, contract invariants, bad input.

Corpus layout: tests/corpus/direct/<project>/<relative path> plus
<relative path>.expected.json; source_file is the path inside <project>.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from godot_rag.domain.chunking.direct import CHUNKER_VERSION, chunk_direct
from godot_rag.domain.models import PARSE_EMPTY, PARSE_FAILED, PARSE_OK, PARSE_PARTIAL, ChunkingResult

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "direct"
EXPECTED_SUFFIX = ".expected.json"


def _fixtures() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and not p.name.endswith(EXPECTED_SUFFIX))


def _expected(path: Path) -> dict:
    return json.loads(path.with_name(path.name + EXPECTED_SUFFIX).read_text(encoding="utf-8"))


def _run(path: Path) -> ChunkingResult:
    exp = _expected(path)
    return chunk_direct(exp["source_file"], exp["source_kind"], path.read_bytes())


def _fixture(rel: str) -> tuple[dict, ChunkingResult]:
    path = CORPUS / rel
    return _expected(path), _run(path)


def _chunk(result: ChunkingResult, chunk_id: str):
    matches = [c for c in result.chunks if c.chunk_id == chunk_id]
    assert matches, f"{chunk_id} not in {[c.chunk_id for c in result.chunks]}"
    return matches[0]


def assert_invariants(source: bytes, result: ChunkingResult) -> None:
    """The contract, re-checked independently of the chunker's own check."""
    body = source[3:] if source.startswith(b"\xef\xbb\xbf") else source
    lines = body.decode("utf-8").split("\n")
    blank = [not ln.strip() for ln in lines]
    owners = [0] * len(lines)
    ids = [c.chunk_id for c in result.chunks]
    assert len(ids) == len(set(ids)), "chunk ids must be unique"
    assert [c.chunk_order for c in result.chunks] == list(range(1, len(result.chunks) + 1))
    for c in result.chunks:
        s = c.span
        assert source[s.start_byte : s.end_byte].decode("utf-8") == c.code_text
        assert 1 <= s.start_line <= s.end_line <= len(lines)
        assert not blank[s.start_line - 1] and not blank[s.end_line - 1], "a chunk spans non-blank to non-blank"
        expected_text = "\n".join(lines[s.start_line - 1 : s.end_line])
        if expected_text.endswith("\r"):
            expected_text = expected_text[:-1]
        assert c.code_text == expected_text
        assert c.chunk_id == f"{result.source_file}:{c.chunk_kind}:{c.name}" or c.chunk_id.startswith(
            f"{result.source_file}:{c.chunk_kind}:{c.name}#"
        )
        assert len(c.code_mask) == len(c.code_text)
        assert [i for i, ch in enumerate(c.code_mask) if ch in "\r\n"] == [i for i, ch in enumerate(c.code_text) if ch in "\r\n"]
        for ln in range(s.start_line, s.end_line + 1):
            owners[ln - 1] += 1
    for idx, is_blank in enumerate(blank):
        if not is_blank:
            assert owners[idx] == 1, f"non-blank line {idx + 1} is in {owners[idx]} chunks"
    assert result.source_sha256 == hashlib.sha256(source).hexdigest()
    assert result.producer_version == CHUNKER_VERSION


# --------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_file_matches_expected(path: Path) -> None:
    exp = _expected(path)
    result = chunk_direct(exp["source_file"], exp["source_kind"], path.read_bytes())
    got = [
        {
            "chunk_id": c.chunk_id,
            "chunk_kind": c.chunk_kind,
            "start_line": c.span.start_line,
            "end_line": c.span.end_line,
            "reference_candidates": list(c.reference_candidates),
            "symbol_candidates": list(c.symbol_candidates),
        }
        for c in result.chunks
    ]
    assert result.status == exp["status"]
    assert got == exp["chunks"]
    errors = [
        {"line": e.line, "column": e.column, "end_line": e.end_line, "end_column": e.end_column, "message": e.message}
        for e in result.errors
    ]
    assert errors == exp["errors"]
    assert_invariants(path.read_bytes(), result)


def test_every_fixture_has_expected_and_every_expected_has_fixture() -> None:
    fixtures = {p.name + EXPECTED_SUFFIX for p in _fixtures()}
    expected = {p.name for p in CORPUS.rglob("*" + EXPECTED_SUFFIX)}
    assert fixtures == expected
    assert len(fixtures) >= 20


def test_corpus_output_is_deterministic() -> None:
    for path in _fixtures():
        assert _run(path) == _run(path)


def test_corpus_has_the_required_kinds_of_fixture() -> None:
    rels = {str(p.relative_to(CORPUS)) for p in _fixtures()}
    for rel in (
        "dodge_the_creeps/main.tscn",
        "dodge_the_creeps/hud.tscn",
        "dodge_the_creeps/player.tscn",
        "dodge_the_creeps/mob.tscn",
        "dodge_the_creeps/project.godot",
        "dodge_the_creeps/icon.webp.import",
        "dodge_the_creeps/player.gd.uid",
        "dodge_the_creeps/.gitignore",
        "mini_dodge/project.godot",
        "mini_dodge/player.tscn",
        "godot3_dodge/project.godot",
        "godot3_dodge/Player.tscn",
        "godot3_dodge/hud_font.tres",
        "godot4_format2/title.tscn",
        "malformed/broken.tscn",
        "crlf/theme.tres",
    ):
        assert rel in rels
    assert b"format=2" in (CORPUS / "godot4_format2/title.tscn").read_bytes()
    assert b"config_version=5" in (CORPUS / "godot4_format2/project.godot").read_bytes()


# --------------------------------------------------------------------------- seed examples


def test_seed_000_mini_dodge_project_application_is_e004_to_e006() -> None:
    # project.godot content starts at E002, so E004-E006 are file lines 3-5.
    _, result = _fixture("mini_dodge/project.godot")
    app = _chunk(result, "project.godot:section:application")
    assert (app.span.start_line, app.span.end_line) == (3, 5)
    assert app.code_text == '[application]\nconfig/name="Mini Dodge"\nrun/main_scene="res://player.tscn"'
    assert app.reference_candidates == ("res://player.tscn",)
    cv = _chunk(result, "project.godot:config_version:config_version")
    assert cv.symbol_candidates == ("config_version=5",)


def test_seed_000_mini_dodge_player_scene() -> None:
    # player.tscn content starts at E042: E044 is line 3, E046-E047 lines 5-6.
    _, result = _fixture("mini_dodge/player.tscn")
    ext = _chunk(result, "player.tscn:ext_resource:1")
    assert (ext.span.start_line, ext.span.end_line) == (3, 3)
    assert ext.code_text == '[ext_resource type="Script" path="res://player.gd" id="1"]'
    node = _chunk(result, "player.tscn:node:Player")
    assert (node.span.start_line, node.span.end_line) == (5, 6)
    assert node.reference_candidates == ("res://player.gd",)
    assert node.surrounding_context == ext.code_text
    assert node.api_call_candidates == ("script",)
    assert node.symbol_candidates == ("Area2D",)


def test_seed_001_main_tscn_ext_resource_example() -> None:
    _, result = _fixture("dodge_the_creeps/main.tscn")
    ext = _chunk(result, "main.tscn:ext_resource:1_0r6n5")
    assert ext.code_text == '[ext_resource type="Script" uid="uid://c4wt6ace7hycd" path="res://main.gd" id="1_0r6n5"]'
    assert ext.reference_candidates[0] == "res://main.gd"
    player = _chunk(result, "main.tscn:node:Main/Player")
    assert player.reference_candidates == ("res://player.tscn",)
    assert "res://player.tscn" in player.surrounding_context


def test_dodge_project_godot_cuts_application_around_features() -> None:
    _, result = _fixture("dodge_the_creeps/project.godot")
    kinds = [(c.chunk_kind, c.name) for c in result.chunks]
    assert kinds[:4] == [
        ("config_version", "config_version"),
        ("section", "application"),
        ("features", "config/features"),
        ("section", "application"),
    ]
    assert result.chunks[3].chunk_id == "project.godot:section:application#2"
    feat = result.chunks[2]
    assert feat.code_text == 'config/features=PackedStringArray("4.6")'
    # The engine comment header belongs to config_version, masked but same shape.
    cv = result.chunks[0]
    assert cv.code_text.startswith("; Engine configuration file.")
    assert cv.code_text.endswith("config_version=5")
    assert cv.code_mask.splitlines()[0] == ";" + " " * (len("; Engine configuration file.") - 1)
    assert cv.code_mask.endswith("config_version=5")
    # Multi-line description stays whole inside the application chunk.
    assert "and avoid the enemies" in result.chunks[1].code_text
    actions = [c for c in result.chunks if c.chunk_kind == "input_action"]
    assert [c.name for c in actions] == ["move_left", "move_right", "move_up", "move_down", "start_game"]
    assert actions[0].code_text.startswith("[input]\n\nmove_left={")
    assert all(c.code_text.rstrip().endswith("}") for c in actions)
    assert "InputEventJoypadMotion" in actions[0].symbol_candidates


def test_godot3_scene_numeric_ext_resources_resolve() -> None:
    _, result = _fixture("godot3_dodge/Player.tscn")
    root = _chunk(result, "Player.tscn:node:Player")
    assert "script = ExtResource( 1 )" in root.code_text
    assert root.reference_candidates == ("res://Player.gd",)
    assert root.symbol_candidates == ("KinematicBody2D",)
    assert root.surrounding_context == '[ext_resource path="res://Player.gd" type="Script" id=1]'
    frames = _chunk(result, "Player.tscn:sub_resource:1")
    assert frames.reference_candidates == (
        "res://art/playerGrey_walk1.png",
        "res://art/playerGrey_walk2.png",
        "res://art/playerGrey_up1.png",
    )
    assert _chunk(result, "Player.tscn:header:gd_scene").symbol_candidates == ("format=2",)


def test_godot3_main_scene_paths_properties_and_connections() -> None:
    _, result = _fixture("godot3_dodge/Main.tscn")
    rect = _chunk(result, "Main.tscn:node:Main/ColorRect")
    assert "rect_min_size" in rect.api_call_candidates
    assert _chunk(result, "Main.tscn:node:Main/MobPath/MobSpawnLocation").symbol_candidates == ("PathFollow2D",)
    assert _chunk(result, "Main.tscn:node:Main/HUD/ScoreLabel").api_call_candidates == ("margin_right",)
    curve = _chunk(result, "Main.tscn:sub_resource:1")
    assert "PoolVector2Array" in curve.symbol_candidates
    assert (curve.span.start_line, curve.span.end_line) == (8, 12)
    _chunk(result, "Main.tscn:editable:Main/HUD")
    _chunk(result, "Main.tscn:connection:Main/Player.hit->Main.game_over")


def test_godot3_project_keeps_global_classes_and_comment_attachment() -> None:
    _, result = _fixture("godot3_dodge/project.godot")
    top = _chunk(result, "project.godot:top_level:_global_script_classes")
    # _global_script_class_icons has a blank line inside its braces: still one value.
    assert (top.span.start_line, top.span.end_line) == (11, 20)
    start = _chunk(result, "project.godot:input_action:start_game")
    assert start.code_text.startswith("; start with Enter or Space\nstart_game={")
    assert start.code_mask.startswith(";" + " " * len(" start with Enter or Space") + "\nstart_game={")
    display = _chunk(result, "project.godot:section:display")
    assert "; keep the aspect on phones" in display.code_text


def test_code_mask_keeps_strings() -> None:
    _, result = _fixture("godot3_dodge/Player.tscn")
    root = _chunk(result, "Player.tscn:node:Player")
    assert 'type="KinematicBody2D"' in root.code_mask
    assert root.code_mask == root.code_text


def test_resource_chunk_and_import_sections() -> None:
    _, result = _fixture("godot3_dodge/hud_font.tres")
    res = _chunk(result, "hud_font.tres:resource:resource")
    assert res.reference_candidates == ("res://fonts/Xolonium-Regular.ttf",)
    assert res.surrounding_context == ""
    _, imp = _fixture("godot3_dodge/icon.png.import")
    assert [c.name for c in imp.chunks] == ["remap", "deps", "params"]
    assert imp.chunks[0].symbol_candidates == ("StreamTexture",)


def test_empty_gdignore_is_empty() -> None:
    exp, result = _fixture("dodge_the_creeps/screenshots/.gdignore")
    assert exp["status"] == PARSE_EMPTY
    assert result.status == PARSE_EMPTY and result.chunks == ()


# --------------------------------------------------------------------------- malformed


def test_malformed_scene_is_partial_with_full_coverage() -> None:
    path = CORPUS / "malformed/broken.tscn"
    _, result = _fixture("malformed/broken.tscn")
    assert result.status == PARSE_PARTIAL
    assert [e.line for e in result.errors] == [1, 11, 19]
    assert "before any section header" in result.errors[0].message
    assert "unclosed section header" in result.errors[1].message
    assert "unterminated" in result.errors[2].message
    frag = _chunk(result, "broken.tscn:fragment:11")
    assert (frag.span.start_line, frag.span.end_line) == (11, 13)
    # The broken value stops before the next header, which keeps its own chunk.
    _chunk(result, "broken.tscn:connection:Root.ready->Root._on_ready")
    assert_invariants(path.read_bytes(), result)


@pytest.mark.parametrize(
    ("kind", "text", "messages", "chunk_kinds"),
    [
        ("scene", '[gd_scene format=3]\n\n[node name="A" type="Node"\nfoo = 1\n', ["unclosed"], ["header", "fragment"]),
        ("scene", "a = 1\nb = 2\n\n[gd_scene format=3]\n", ["before any", "before any"], ["fragment", "header"]),
        (
            "scene",
            '[gd_scene format=3]\n[node name="A" type="Node"]\ntext = "never closed\n\nx\n',
            ["unterminated"],
            ["header", "node"],
        ),
        (
            "resource",
            '[gd_resource type="Curve" format=3]\n[resource]\n_data = [1, 2,\n3\n',
            ["unterminated"],
            ["header", "resource"],
        ),
        ("scene", '[gd_scene format=3]\n[node name="A" type="Node"]\njunk line\n', ["expected 'key = value'"], ["header", "node"]),
        (
            "project_config",
            'config_version=5\n[application\nconfig/name="x"\n\n[display]\na=1\n',
            ["unclosed"],
            ["config_version", "fragment", "section"],
        ),
        ("config", "[a]\nx={\n\n[b]\ny=2\n", ["unterminated"], ["section", "section"]),
    ],
)
def test_malformed_inputs(kind: str, text: str, messages: list[str], chunk_kinds: list[str]) -> None:
    source = text.encode()
    result = chunk_direct("f", kind, source)
    assert result.status == PARSE_PARTIAL
    assert len(result.errors) == len(messages)
    for err, msg in zip(result.errors, messages):
        assert msg in err.message
        assert err.line >= 1 and err.column >= 1
    assert [c.chunk_kind for c in result.chunks] == chunk_kinds
    assert_invariants(source, result)


def test_truncated_fixtures_never_break_the_contract() -> None:
    # Cutting real files anywhere produces unclosed headers and values.
    for path in _fixtures():
        exp = _expected(path)
        data = path.read_bytes()
        cuts = sorted({i for i, b in enumerate(data) if b == 0x0A} | set(range(0, len(data), 37)))
        for cut in cuts:
            piece = data[:cut]
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError:
                continue
            result = chunk_direct(exp["source_file"], exp["source_kind"], piece)
            assert result.status in (PARSE_OK, PARSE_PARTIAL, PARSE_EMPTY)
            assert_invariants(piece, result)


# --------------------------------------------------------------------------- encodings


@pytest.mark.parametrize(
    "rel", ["dodge_the_creeps/project.godot", "dodge_the_creeps/hud.tscn", "godot3_dodge/.gitignore", "crlf/theme.tres"]
)
def test_crlf_and_bom_give_the_same_chunks_with_exact_spans(rel: str) -> None:
    exp = _expected(CORPUS / rel)
    raw = (CORPUS / rel).read_bytes()
    lf = raw.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n")
    variants = [lf, lf.replace(b"\n", b"\r\n"), b"\xef\xbb\xbf" + lf.replace(b"\n", b"\r\n"), b"\xef\xbb\xbf" + lf]
    shapes = []
    for data in variants:
        result = chunk_direct(exp["source_file"], exp["source_kind"], data)
        assert_invariants(data, result)
        assert all("\ufeff" not in c.code_text for c in result.chunks)
        assert all(not c.code_text.endswith("\r") for c in result.chunks)
        shapes.append([(c.chunk_id, c.span.start_line, c.span.end_line, c.reference_candidates) for c in result.chunks])
    assert all(s == shapes[0] for s in shapes)


def test_bom_first_chunk_starts_after_bom() -> None:
    data = b"\xef\xbb\xbfconfig_version=5\r\n"
    result = chunk_direct("project.godot", "project_config", data)
    assert result.chunks[0].span.start_byte == 3
    assert result.chunks[0].code_text == "config_version=5"


# --------------------------------------------------------------------------- bad input


def test_invalid_utf8_fails_naming_the_offset() -> None:
    data = b'[gd_scene format=3]\n\n[node name="\xff"]\n'
    result = chunk_direct("a.tscn", "scene", data)
    assert result.status == PARSE_FAILED and result.chunks == ()
    assert "byte offset 33" in result.errors[0].message
    assert (result.errors[0].line, result.errors[0].column) == (3, 13)


def test_nul_bytes_fail_as_binary() -> None:
    result = chunk_direct("a.tres", "resource", b"[gd_resource format=3]\n\x00\x01")
    assert result.status == PARSE_FAILED and result.chunks == ()
    assert "binary content" in result.errors[0].message


def test_over_max_bytes_fails() -> None:
    result = chunk_direct("a.cfg", "config", b"[a]\nb=1\n", max_bytes=4)
    assert result.status == PARSE_FAILED and result.chunks == ()
    assert "too large" in result.errors[0].message


def test_sha256_checked_when_given() -> None:
    data = (CORPUS / "mini_dodge/player.tscn").read_bytes()
    good = chunk_direct("player.tscn", "scene", data, expected_sha256=hashlib.sha256(data).hexdigest())
    assert good.status == PARSE_OK and len(good.chunks) == 3
    bad = chunk_direct("player.tscn", "scene", data, expected_sha256="0" * 64)
    assert bad.status == PARSE_FAILED and bad.chunks == ()
    assert "sha256 mismatch" in bad.errors[0].message
    assert bad.source_sha256 == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("kind", ["scene", "resource", "project_config", "import_meta", "uid", "ignore", "config", "text"])
@pytest.mark.parametrize("data", [b"", b"\n\n", b"  \r\n\t\n", b"\xef\xbb\xbf"])
def test_empty_and_blank_files_are_empty(kind: str, data: bytes) -> None:
    result = chunk_direct("f", kind, data)
    assert result.status == PARSE_EMPTY and result.chunks == () and result.errors == ()


def test_unknown_kind_and_non_bytes_fail_without_raising() -> None:
    assert chunk_direct("a.md", "markdown", b"# hi\n").status == PARSE_FAILED
    assert chunk_direct("a.tscn", "scene", "text").status == PARSE_FAILED  # type: ignore[arg-type]


# --------------------------------------------------------------------------- small rules


def test_duplicate_names_get_ordinals() -> None:
    data = b'[gd_scene format=3]\n[node name="A" type="Node"]\n[node name="B" parent="."]\n[node name="B" parent="."]\n[node name="B" parent="."]\n'
    result = chunk_direct("d.tscn", "scene", data)
    assert [c.chunk_id for c in result.chunks] == [
        "d.tscn:header:gd_scene",
        "d.tscn:node:A",
        "d.tscn:node:A/B",
        "d.tscn:node:A/B#2",
        "d.tscn:node:A/B#3",
    ]


def test_uid_file_one_chunk_per_line() -> None:
    result = chunk_direct("x.gd.uid", "uid", b"uid://abc123\n\nuid://def456\n")
    assert [(c.chunk_id, c.reference_candidates) for c in result.chunks] == [
        ("x.gd.uid:line:1", ("uid://abc123",)),
        ("x.gd.uid:line:3", ("uid://def456",)),
    ]


def test_ignore_comment_lines_are_masked() -> None:
    _, result = _fixture("godot3_dodge/.gitignore")
    first = result.chunks[0]
    assert first.code_text == "# Godot-specific ignores"
    assert first.code_mask == "#" + " " * (len(first.code_text) - 1)
    assert result.chunks[1].code_mask == ".import/"


def test_text_blocks_named_by_first_line() -> None:
    _, result = _fixture("godot4_format2/shaders/outline.gdshader")
    assert [(c.name, c.span.start_line, c.span.end_line) for c in result.chunks] == [("1", 1, 1), ("3", 3, 4), ("6", 6, 9)]
    assert all(c.chunk_kind == "block" for c in result.chunks)


def test_header_trailing_comment_is_masked_not_parsed() -> None:
    data = b"[display] ; screen\nwindow/size/width=480\n"
    result = chunk_direct("project.godot", "project_config", data)
    assert result.status == PARSE_OK
    assert result.chunks[0].code_mask.startswith("[display] ;       \n")


def test_godot4_format2_scene_in_godot4_project() -> None:
    _, scene = _fixture("godot4_format2/title.tscn")
    assert _chunk(scene, "title.tscn:header:gd_scene").symbol_candidates == ("format=2",)
    label = _chunk(scene, "title.tscn:node:Title/Label")
    assert label.reference_candidates == ("res://fonts/title_font.tres",)
    _, project = _fixture("godot4_format2/project.godot")
    assert _chunk(project, "project.godot:config_version:config_version").symbol_candidates == ("config_version=5",)
    feat = _chunk(project, "project.godot:features:config/features")
    assert '"4.2"' in feat.code_text


# --------------------------------------------------------------------------- mutations

_JUNK = [
    b"[",
    b"]",
    b'"',
    b"\\",
    b"\n",
    b"\t",
    b"(",
    b")",
    b"{",
    b"}",
    b"=",
    b"#",
    b"\x00",
    b"\xe2\x82",
    b"[node ",
    b'&"',
    b'^"',
    b"@",
    b":",
    b"    ",
    "\u2028".encode(),
]


def _mutated(rng, data: bytes) -> bytes:
    for _ in range(rng.randint(1, 5)):
        if not data:
            return rng.choice(_JUNK)
        i = rng.randrange(len(data))
        j = min(len(data), i + rng.randint(1, 120))
        op = rng.random()
        if op < 0.3:
            data = data[:i] + data[j:]
        elif op < 0.5:
            data = data[:i] + data[i:j] + data[i:j] + data[j:]
        elif op < 0.9:
            data = data[:i] + rng.choice(_JUNK) * rng.randint(1, 4) + data[i:]
        else:
            data = data[:i]
    return data


def test_mutated_files_keep_the_contract_and_build_queries():
    """Deleted, doubled and broken spans of every corpus file (unclosed strings and brackets, stray
    headers, NUL bytes, cut-off UTF-8): the chunker never raises, what it returns keeps the contract, and
    every chunk builds its retriever query."""
    import random

    from godot_rag.domain.retrieval.fusion import query_lexemes
    from godot_rag.domain.retrieval.query import build_embedding_text, build_retriever_query

    rng = random.Random(20261202)
    seeds = [(_expected(p), p.read_bytes()) for p in _fixtures()]
    for _ in range(1500):
        exp, data = rng.choice(seeds)
        data = _mutated(rng, data)
        result = chunk_direct(exp["source_file"], exp["source_kind"], data)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            assert result.status == PARSE_FAILED and result.chunks == ()
            continue
        if result.chunks:
            assert_invariants(data, result)
        for chunk in result.chunks:
            query = build_retriever_query(prompt="Is this Godot 3 or Godot 4?", chunk=chunk)
            build_embedding_text(query)
            query_lexemes(query)


def test_a_connection_names_its_signal_as_a_candidate() -> None:
    """The connected signal may be an engine signal Godot 4 renamed: it is the chunk's candidate (the
    node names and the method are the project's own, and stay out)."""
    src = (
        b'[gd_scene format=2]\n\n[node name="Main" type="Node"]\n\n[node name="Tween" type="Tween" parent="."]\n\n'
        b'[connection signal="tween_completed" from="Tween" to="." method="_on_Tween_tween_completed"]\n'
        b'[connection signal="not an identifier" from="Tween" to="." method="_x"]\n'
    )
    result = chunk_direct("main.tscn", "scene", src)
    assert_invariants(src, result)
    conn = _chunk(result, "main.tscn:connection:Main/Tween.tween_completed->Main._on_Tween_tween_completed")
    assert conn.api_call_candidates == ("tween_completed",) and conn.symbol_candidates == ()
    odd = [c for c in result.chunks if c.chunk_kind == "connection"][1]
    assert odd.api_call_candidates == ()


def test_an_import_files_own_sections_have_no_key_candidates() -> None:
    """[remap] and [deps] say where the imported copy is: their keys (importer, type, path...) are the format's,
    not engine names (`path` is not the Path node); the type in them is the chunk's symbol. [params] keys are the
    importer's options and stay candidates."""
    src = (
        b'[remap]\n\nimporter="texture"\ntype="StreamTexture"\npath="res://.import/icon.png-4872.stex"\n\n'
        b'[deps]\n\nsource_file="res://icon.png"\ndest_files=[ "res://.import/icon.png-4872.stex" ]\n\n'
        b"[params]\n\ncompress/mode=0\nflags/filter=true\n"
    )
    result = chunk_direct("icon.png.import", "import_meta", src)
    assert_invariants(src, result)
    remap = _chunk(result, "icon.png.import:section:remap")
    assert remap.api_call_candidates == () and remap.symbol_candidates == ("StreamTexture",)
    assert _chunk(result, "icon.png.import:section:deps").api_call_candidates == ()
    assert _chunk(result, "icon.png.import:section:params").api_call_candidates == ("compress/mode", "flags/filter")
