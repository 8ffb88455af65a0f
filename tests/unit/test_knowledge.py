"""Knowledge records built from the shipped data, the authored data files, and score fusion."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from importlib import resources

import pytest

from godot_rag.domain.retrieval import fusion
from godot_rag.domain.retrieval.knowledge import (
    CHANGE_TYPES,
    clean_markup,
    identifier_lexemes,
    rst_sections,
)
from godot_rag.infra import kb_store
from godot_rag.infra.embedder import text_sha256
from godot_rag.pipeline.kb import SHIPPED_VECTORS, knowledge_records


@pytest.fixture(scope="module")
def records():
    return knowledge_records()


@pytest.fixture(scope="module")
def by_id(records):
    return {(r.table, r.id): r for r in records}


def test_ids_are_unique_and_tables_known(records):
    keys = [(r.table, r.id) for r in records]
    assert len(keys) == len(set(keys))
    assert {r.table for r in records} == {"docs_chunks", "api_mapping", "label_prototypes"}


def test_one_docs_record_per_class_and_member_of_both_references(records):
    docs = [r for r in records if r.id.startswith("docs:")]
    assert Counter(r.payload["engine_version"] for r in docs) == {"4.x": 24492, "3.x": 13800}
    kinds = Counter(r.payload["kind"] for r in docs)
    assert kinds["class"] == 994 + 714
    for kind in ("method", "property", "signal", "constant", "enum", "annotation", "theme_item"):
        assert kinds[kind] > 0, kind


def test_member_record_fields(by_id):
    r = by_id[("docs_chunks", "docs:4:Input.is_action_pressed")]
    p = r.payload
    assert (p["class"], p["member"], p["kind"], p["engine_version"]) == ("Input", "is_action_pressed", "method", "4.x")
    assert p["signature"].startswith("is_action_pressed(action: StringName")
    assert p["content"] and "[" not in p["content"][:40]  # BBCode cleaned
    assert r.lexemes == ("input.is_action_pressed", "is_action_pressed") and r.lexemes_b == ("input",)
    assert r.embed_text == ""  # members are lexical-only
    g3 = by_id[("docs_chunks", "docs:3:KinematicBody2D")]
    assert g3.payload["engine_version"] == "3.x" and g3.embed_text.startswith("Godot 3 class KinematicBody2D")
    assert "source_file" not in g3.search_text and "http" not in g3.search_text  # paths/urls stay metadata


def test_migration_guide_sections_are_docs_records(records):
    guide = [r for r in records if r.id.startswith("guide:")]
    pages = {r.payload["page"] for r in guide}
    assert {
        "upgrading_to_godot_4",
        "upgrading_to_godot_4.1",
        "upgrading_to_godot_4.4",
        "gdscript_basics",
        "gdscript_exports",
    } <= pages
    assert {r.payload["engine_version"] for r in guide} == {"4.x", "3.x"}
    manual = [r for r in guide if "Manually renaming" in r.payload["title"]]
    assert manual and any("change_scene" in r.lexemes for r in manual)
    assert all(r.embed_text and len(r.payload["content"]) <= 2 * 1200 + 1200 for r in guide)


def test_rename_pairs_keep_disabled_traps(records):
    renames = [r for r in records if r.id.startswith("rename:")]
    assert len(renames) == 1687
    disabled = [r for r in renames if not r.payload["enabled"]]
    assert len(disabled) == 88
    assert all("never sole evidence" in r.payload["description"] for r in disabled)
    for r in renames:
        p = r.payload
        assert {"old_symbol", "new_symbol", "change_type", "language", "enabled", "old_in_godot4", "new_in_godot3"} <= set(p)
        assert p["change_type"] in CHANGE_TYPES
    kb2d = next(r for r in renames if r.id == "rename:class_renames:KinematicBody2D")
    assert kb2d.payload["new_symbol"] == "CharacterBody2D" and not kb2d.payload["old_in_godot4"]
    assert "kinematicbody2d" in kb2d.lexemes and "characterbody2d" in kb2d.lexemes


REQUIRED_CHANGES = {
    "yield-await",
    "connect-callable",
    "disconnect-callable",
    "setget",
    "export-keyword",
    "export-range",
    "onready",
    "tool",
    "move-and-slide",
    "tween-node",
    "file-class",
    "directory-class",
    "string-right",
    "array-slice",
    "camera2d-zoom",
    "extents-size",
    "rotation-degrees",
    "instance-instantiate",
    "os-window-fullscreen",
    "json-parse",
    "rpc-keywords",
}


def test_guide_changes_cover_what_a_rename_cannot_express(by_id):
    extras = {rid.removeprefix("change:"): r for (table, rid), r in by_id.items() if rid.startswith("change:")}
    assert REQUIRED_CHANGES <= set(extras)
    for name, r in extras.items():
        p = r.payload
        assert p["change_type"] in CHANGE_TYPES, name
        assert p["source"].startswith(("godot-docs ", "godotengine/godot ")), name
        assert p["before_code"] and p["after_code"] and p["description"], name
        assert p["enabled"] is True and p["language"] == "gdscript"
        assert r.embed_text, name
    assert by_id[("api_mapping", "change:move-and-slide")].payload["change_type"] == "behaviour"


def test_prototypes_cover_every_label_in_both_directions(records):
    authored = [r for r in records if r.id.startswith("proto:")]
    assert len(authored) >= 60
    labels = Counter(r.payload["label"] for r in authored)
    assert set(labels) == {"godot3", "godot4", "neutral"} and min(labels.values()) >= 15
    for r in authored:
        p = r.payload
        for key in ("label", "input_pattern", "prompt_pattern", "before_code", "after_code", "expected_response", "explanation"):
            assert isinstance(p[key], str) and p[key], (r.id, key)
        if p["label"] == "neutral":
            assert p["before_code"] == p["after_code"] == p["input_pattern"]
        elif p["label"] == "godot3":
            assert p["input_pattern"] == p["before_code"] != p["after_code"]
        else:
            assert p["input_pattern"] == p["after_code"] != p["before_code"]
    neutral_movement = next(r for r in authored if r.id == "proto:n-input-movement")
    assert "Input.is_action_pressed" in neutral_movement.payload["input_pattern"]
    assert "Vector2.ZERO" in neutral_movement.payload["input_pattern"]


def test_converter_examples_are_godot3_prototypes(records):
    examples = [r for r in records if r.id.startswith("converter:")]
    assert len(examples) > 100
    assert all(r.payload["label"] == "godot3" and r.payload["before_code"] != r.payload["after_code"] for r in examples)
    assert not any("csharp" in r.id for r in examples)


def test_shipped_vectors_cover_every_embed_text(records):
    """Fails when the data changed without `godot-rag kb export-vectors` (the build would embed anew: slower, still right)."""
    with resources.files("godot_rag.kb_data").joinpath(SHIPPED_VECTORS).open("rb") as raw, gzip.open(raw, "rb") as fh:
        header = json.loads(fh.readline())
        body = fh.read()
    assert header["model"] == "sentence-transformers/all-MiniLM-L6-v2" and header["dim"] == 384
    size = 32 + 2 * header["dim"]
    shipped = {body[i : i + 32].hex() for i in range(0, len(body), size)}
    assert len(shipped) == header["count"]
    needed = {text_sha256(r.embed_text) for r in records if r.embed_text}
    assert needed <= shipped, f"{len(needed - shipped)} embed texts have no shipped vector: run godot-rag kb export-vectors"


def test_markup_and_sections():
    assert (
        clean_markup("Calls [method Node._ready] on [Node] with [param delta], see [code]x[/code].")
        == "Calls Node._ready on Node with delta, see x."
    )
    assert (
        clean_markup("Use :ref:`move_and_slide<class_KinematicBody2D_method_move_and_slide>` and ``velocity``.")
        == "Use move_and_slide and velocity."
    )
    sections = rst_sections("Title\n=====\n\nintro\n\nPart\n----\n\nbody ``yield``\n")
    assert sections == [(["Title"], "intro"), (["Title", "Part"], "body ``yield``")]
    assert identifier_lexemes("$Sprite.texture.get_size()") == [
        "sprite.texture.get_size",
        "sprite",
        "texture",
        "get_size",
        "texture.get_size",
    ]


def test_tsvector_and_tsquery_literals_are_exact_and_quoted():
    assert (
        kb_store.tsvector_literal([("move_and_slide", "A"), ("it's", "B"), ("move_and_slide", "C")])
        == "'move_and_slide':1A 'it''s':2B"
    )
    assert kb_store.tsquery_literal(["input.is_action_pressed", "a\\b"]) == "'input.is_action_pressed' | 'a\\\\b'"


def _row(rid, keys, text, vector, trigram):
    return {"id": rid, "title": rid, "key_score": keys, "text_score": text, "vector_score": vector, "trigram_score": trigram}


def test_weighted_fusion_normalises_and_keeps_components():
    rows = [_row("a", 8.0, 0.4, 0.2, 0.1), _row("b", 2.0, 0.1, 0.9, 0.9), _row("c", 0.0, 0.0, 0.3, 0.0)]
    kept = fusion.fuse(rows, 2, with_vector=True)
    wv, wk, wt, wg = fusion.DEFAULT_CONFIG.weights_hybrid
    by_id = {r["id"]: (score, comp) for score, r, comp in kept}
    assert set(by_id) == {"a", "b"}
    score, comp = by_id["a"]
    assert comp == {"keys": 1.0, "text": 1.0, "trigram": 0.1, "vector": 0.2, "keys_raw": 8.0, "text_raw": 0.4}
    assert score == pytest.approx(wv * 0.2 + wk * 1.0 + wt * 1.0 + wg * 0.1)
    assert by_id["b"][0] == pytest.approx(wv * 0.9 + wk * 0.25 + wt * 0.25 + wg * 0.9)
    lexical = fusion.fuse(rows, 3, with_vector=False)
    assert "vector" not in lexical[0][2] and lexical[0][1]["id"] == "a"


def test_a_record_without_vector_is_scored_on_the_lexical_components():
    rows = [_row("member", 8.0, 0.4, None, 0.5), _row("class", 8.0, 0.4, 0.1, 0.5)]
    kept = {r["id"]: (score, comp) for score, r, comp in fusion.fuse(rows, 2, with_vector=True)}
    wv, wk, wt, wg = fusion.DEFAULT_CONFIG.weights_hybrid
    assert "vector" not in kept["member"][1]
    assert kept["member"][0] == pytest.approx((wk + wt + wg * 0.5) / (wk + wt + wg))
    assert kept["member"][0] > kept["class"][0]


def test_rrf_fusion_ranks_by_reciprocal_ranks():
    cfg = fusion.SearchConfig(fusion=fusion.FUSION_RRF)
    rows = [_row("a", 3.0, 0.2, 0.5, 0.1), _row("b", 2.0, 0.3, 0.6, 0.2), _row("c", 0.0, 0.0, 0.1, 0.0)]
    kept = fusion.fuse(rows, 3, with_vector=True, config=cfg)
    assert [r["id"] for _, r, _ in kept] == ["b", "a", "c"]
    assert kept[0][0] == pytest.approx(1 / 61 + 1 / 62 + 1 / 61 + 1 / 61)  # vector, keys, text, trigram ranks
    assert kept[2][0] == pytest.approx(1 / 63)  # c: only its vector is above zero
