"""Retriever query building (seed 001): content only, the worked example, prompt intents."""

from __future__ import annotations

import inspect
import re
from dataclasses import fields

import pytest

from godot_rag import convert
from godot_rag.domain.chunking.files import chunk_file
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.ingest.policy import classify_path
from godot_rag.domain.models import RetrieverQuery
from godot_rag.domain.retrieval import fusion, search
from godot_rag.domain.retrieval.query import (
    INTENT_EXPLAIN,
    INTENT_MIGRATION,
    INTENT_VERSION,
    TABLE_PRIORITY,
    build_embedding_text,
    build_retriever_query,
    extract_prompt_terms,
    primary_intent,
    strip_comments,
)
from godot_rag.infra import kb_store

SEED_PROMPT = "Is this Godot 3 or Godot 4, and what is the basis for converting it?"

# player.gd `_process` of seed 001 (dodge_the_creeps, Godot 4 version).
SEED_PROCESS = """func _process(delta):
\tvar velocity = Vector2.ZERO # The player's movement vector.
\tif Input.is_action_pressed(&"move_right"):
\t\tvelocity.x += 1
\tif Input.is_action_pressed(&"move_left"):
\t\tvelocity.x -= 1
\tif Input.is_action_pressed(&"move_down"):
\t\tvelocity.y += 1
\tif Input.is_action_pressed(&"move_up"):
\t\tvelocity.y -= 1

\tif velocity.length() > 0:
\t\tvelocity = velocity.normalized() * speed
\t\t$AnimatedSprite2D.play()
\telse:
\t\t$AnimatedSprite2D.stop()

\tposition += velocity * delta
\tposition = position.clamp(Vector2.ZERO, screen_size)

\tif velocity.x != 0:
\t\t$AnimatedSprite2D.animation = &"right"
\t\t$AnimatedSprite2D.flip_v = false
\t\t$Trail.rotation = 0
\t\t$AnimatedSprite2D.flip_h = velocity.x < 0
\telif velocity.y != 0:
\t\t$AnimatedSprite2D.animation = &"up"
\t\trotation = PI if velocity.y > 0 else 0
"""


def chunk_of(source: str, path: str = "player.gd", name: str = "_process"):
    result = parse_gdscript(path, source.encode())
    return next(c for c in result.chunks if c.name == name)


def test_seed_worked_example_query_text_is_reproduced():
    query = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk_of(SEED_PROCESS))
    assert query.query_text == (
        "Input.is_action_pressed Vector2.ZERO velocity.normalized position.clamp Vector2 "
        "AnimatedSprite2D _process Godot 3 Godot 4 migration"
    )
    assert query.api_call_candidates == ("Input.is_action_pressed", "Vector2.ZERO", "velocity.normalized", "position.clamp")
    assert query.symbol_candidates == ("Vector2", "AnimatedSprite2D")
    assert query.prompt_terms == ("Godot 3", "Godot 4", "migration")
    assert query.reference_candidates == ()  # $AnimatedSprite2D / $Trail are node paths: never searched
    assert query.raw_chunk_text == chunk_of(SEED_PROCESS).code_text


def test_embedding_text_is_chunk_then_its_engine_class_names():
    query = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk_of(SEED_PROCESS))
    lines = build_embedding_text(query).split("\n")
    code = re.sub(r"[()\[\]{},:;=]+", " ", strip_comments(query.raw_chunk_text))
    assert "\n".join(lines[:-1]) == code
    assert lines[-1] == "Vector2 AnimatedSprite2D"
    # The prompt's words stay out of the vector (they pulled every chunk toward the same guide pages).
    other = build_retriever_query(prompt="What does this do?", chunk=chunk_of(SEED_PROCESS))
    assert build_embedding_text(other) == build_embedding_text(query)


def test_the_query_depends_on_content_not_on_path_or_order():
    source = "extends Node\n\nfunc _ready():\n\tvar t = Timer.new()\n\tadd_child(t)\n"
    a = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk_of(source, "a/player.gd", "_ready"))
    b = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk_of("# other header\n\n" + source, "zzz/other_dir/enemy.gd", "_ready"))
    assert a == b
    for text in (a.query_text, build_embedding_text(a)):
        assert "player" not in text and "a/" not in text


def test_no_trace_field_can_reach_the_search():
    trace_names = {"project_id", "source_file", "source_sha256", "chunk_id", "chunk_order", "chunk_kind", "path", "trace"}
    assert not trace_names & {f.name for f in fields(RetrieverQuery)}
    params = set(inspect.signature(kb_store.search).parameters)
    # vector_index, lexical_index and record_details hold what the knowledge base's loads and earlier
    # searches read: nothing of a chunk.
    assert params == {
        "conn",
        "query",
        "tables",
        "limit_per_table",
        "query_embedding",
        "vector_index",
        "lexical_index",
        "record_details",
        "config",
    }
    assert set(inspect.signature(search.rank).parameters) == {
        "query",
        "tables",
        "limit_per_table",
        "lexical",
        "vectors",
        "query_embedding",
        "config",
    }
    assert not trace_names & {f.name for f in fields(fusion.SearchConfig)}


@pytest.mark.parametrize(
    "prompt,intent",
    [
        ("What does this code do?", INTENT_EXPLAIN),
        ("Explain this function", INTENT_EXPLAIN),
        ("이 코드는 무엇을 하나요? 설명해 주세요", INTENT_EXPLAIN),
        ("O que este código faz? Explique.", INTENT_EXPLAIN),
        ("Was bedeutet dieser Code?", INTENT_EXPLAIN),
        ("Is this code for Godot 3 or 4?", INTENT_VERSION),
        ("이 코드는 Godot 3용인가요 4용인가요?", INTENT_VERSION),
        ("Este código é para Godot 3 ou 4?", INTENT_VERSION),
        ("Ist dieser Code für Godot 3 oder 4?", INTENT_VERSION),
        ("Which engine version is this?", INTENT_VERSION),
        ("Does this need to be converted to Godot 4?", INTENT_MIGRATION),
        ("Godot 4로 변환해야 하나요?", INTENT_MIGRATION),
        ("이 프로젝트를 마이그레이션 해야 하나요?", INTENT_MIGRATION),
        ("Precisa converter isto para o Godot 4?", INTENT_MIGRATION),
        ("Preciso migrar este projeto?", INTENT_MIGRATION),
        ("Muss das in Godot 4 konvertiert werden?", INTENT_MIGRATION),
        ("Wie portiere ich das auf Godot 4?", INTENT_MIGRATION),
    ],
)
def test_prompt_intents_in_four_languages(prompt, intent):
    assert primary_intent(prompt) == intent


def test_table_priority_follows_seed_001():
    assert TABLE_PRIORITY[INTENT_EXPLAIN][0] == "docs_chunks"
    assert TABLE_PRIORITY[INTENT_MIGRATION][:2] == ("api_mapping", "label_prototypes")
    assert set(TABLE_PRIORITY[INTENT_VERSION]) == {"docs_chunks", "api_mapping", "label_prototypes"}
    for tables in TABLE_PRIORITY.values():  # every table stays a candidate source
        assert sorted(tables) == ["api_mapping", "docs_chunks", "label_prototypes"]


def test_prompt_terms():
    assert extract_prompt_terms("What does this code do?") == ["description", "usage"]
    assert extract_prompt_terms("godot3 oder godot 4? Muss das konvertiert werden?") == ["Godot 3", "Godot 4", "migration"]
    assert extract_prompt_terms("") == []


def test_query_lexemes_keep_api_names_whole_and_leave_prompt_terms_out():
    query = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk_of(SEED_PROCESS))
    lexemes = fusion.query_lexemes(query)
    assert lexemes[:3] == ["input.is_action_pressed", "input", "is_action_pressed"]
    assert "godot" not in lexemes and "migration" not in lexemes
    assert "var" not in lexemes and "if" not in lexemes  # words every chunk has
    terms_only = fusion.query_lexemes(query, chunk_identifiers=False)
    assert "flip_h" in lexemes and "flip_h" not in terms_only


def test_comment_words_stay_out_of_the_keys():
    source = 'func _ready():\n\tmodulate = Color("#ff0000") # flash red, see KinematicBody2D docs\n\tshow()\n'
    query = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk_of(source, name="_ready"))
    lexemes = fusion.query_lexemes(query)
    assert "kinematicbody2d" not in lexemes and "flash" not in lexemes
    assert {"modulate", "color", "show"} <= set(lexemes)
    assert strip_comments('x = "a\\"#b" # c') == 'x = "a\\"#b" '
    assert strip_comments("a # b\nc = '#' # d\n# e\nf") == "a \nc = '#' \n\nf"


def test_embedding_text_leaves_out_comments_and_the_punctuation_between_names():
    source = (
        "func _ready():  # Godot 3 KinematicBody2D leftovers\n"
        "\t# velocity = move_and_slide(velocity)\n"
        '\tvar hit := {"a": [1, 2]}; label.text = "#%d" % hit.size()\n'
    )
    query = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk_of(source, name="_ready"))
    text = build_embedding_text(query)
    assert "move_and_slide" not in text and "leftovers" not in text
    assert not set("()[]{},:;=") & set(text)
    # Names, member access, strings (a # inside one is no comment) and operators stay.
    assert text.split() == ["func", "_ready", "var", "hit", '"a"', "1", "2", "label.text", '"#%d"', "%", "hit.size"]


def direct_chunk_of(path: str, source: str, chunk_id: str):
    result = chunk_file(path, classify_path(path)[0], source.encode())
    return next(c for c in result.chunks if c.chunk_id == chunk_id)


@pytest.mark.parametrize(
    "path,source,chunk_id,format_words",
    [
        (
            "player.tscn",
            '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://player.gd" type="Script" id=1]\n\n'
            '[node name="Player" type="KinematicBody2D"]\nscript = ExtResource( 1 )\ncollision_mask = 3\n',
            "player.tscn:node:Player",
            {"node", "name", "type", "extresource", "player"},
        ),
        (
            "icon.png.import",
            '[remap]\n\nimporter="texture"\ntype="StreamTexture"\npath="res://.import/icon.png-1.stex"\n',
            "icon.png.import:section:remap",
            {"remap", "res", "stex", "icon"},
        ),
        ("project.godot", "config_version=4\n\n[display]\n\nwindow/size/width=480\n", "project.godot:section:display", {"display"}),
        (
            "theme.tres",
            '[gd_resource type="DynamicFont" format=2]\n\n[resource]\nsize = 32\n',
            "theme.tres:resource:resource",
            {"resource", "gd_resource", "format"},
        ),
    ],
)
def test_a_direct_chunk_is_searched_by_its_candidates_alone(path, source, chunk_id, format_words):
    chunk = direct_chunk_of(path, source, chunk_id)
    query = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk)
    assert query.direct_chunk
    assert not fusion.searches_vectors(query)
    lexemes = fusion.query_lexemes(query)
    assert lexemes  # its engine names and keys
    assert lexemes == fusion.query_lexemes(query, chunk_identifiers=False)
    # The file format's own words and the project's names are not keys.
    assert not format_words & set(lexemes)


def test_a_scene_node_keeps_its_type_and_property_keys():
    chunk = direct_chunk_of(
        "player.tscn",
        '[gd_scene format=2]\n\n[node name="Player" type="KinematicBody2D"]\ncollision_mask = 3\n',
        "player.tscn:node:Player",
    )
    lexemes = fusion.query_lexemes(build_retriever_query(prompt=SEED_PROMPT, chunk=chunk))
    assert {"kinematicbody2d", "collision_mask"} <= set(lexemes)


@pytest.mark.parametrize(
    "path,source",
    [
        ("player.gd", "extends KinematicBody2D\n\nfunc _ready():\n\tpass\n"),
        ("water.gdshader", "shader_type canvas_item;\n\nvoid fragment() {\n\tCOLOR = texture(TEXTURE, UV);\n}\n"),
        ("notes.txt", "A plain text file\n"),
    ],
)
def test_script_shader_and_text_chunks_keep_the_hybrid_search(path, source):
    kind = classify_path(path)[0]
    for chunk in chunk_file(path, kind, source.encode()).chunks:
        query = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk)
        assert not query.direct_chunk and fusion.searches_vectors(query), chunk.chunk_id


def test_the_direct_flag_survives_the_wire():
    chunk = direct_chunk_of("icon.png.import", '[remap]\n\ntype="StreamTexture"\n', "icon.png.import:section:remap")
    query = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk)
    assert convert.query_from_pb(convert.query_to_pb(query)) == query
    script = build_retriever_query(prompt=SEED_PROMPT, chunk=chunk_of(SEED_PROCESS))
    assert convert.query_from_pb(convert.query_to_pb(script)) == script
