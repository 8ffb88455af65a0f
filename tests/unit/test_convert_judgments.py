"""Judgments are stored and read back without the protobuf round trip: the shortcut must give what it gave."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest

from godot_rag import convert
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.judging.rules import declared_names, judge_chunk
from godot_rag.domain.models import EvidenceUse, Judgment, MigrationNote
from godot_rag.v1 import messages_pb2 as pb

MADE = [
    Judgment(
        signal="godot3",
        needs_migration=True,
        confidence=0.85,
        evidence=(EvidenceUse("api_mapping", "rename:class_renames:KinematicBody2D", True, "extends it"),),
        migration_notes=(MigrationNote(3, "KinematicBody2D", "CharacterBody2D", "rename:class_renames:KinematicBody2D"),),
        explanation="Godot 3 class ✓",
        judge_kind="llm",
        model="qwen",
        prompt_version="judge.v2",
        answer="godot3: needs migration",
        raw_output='{"signal": "godot3"}',
        evidence_kinds=("godot3:renamed_type", "godot3:syntax"),
        status="ok",
        error="",
        prompt_tokens=812,
        completion_tokens=97,
        latency_ms=1234.5,
        llm_calls=2,
        route="llm_ambiguous",
        cached=True,
    ),
    Judgment("neutral", False, 0.0, (), (), "", "rules", "rules", "rules.v1"),
    Judgment("godot4", False, 1, (), (), "x", "llm", "m", "p", status="failed", error="timeout", latency_ms=math.inf),
]


def _sample_judgments(repo) -> list[Judgment]:
    spec = importlib.util.spec_from_file_location("eval_judge", repo / "benchmarks" / "eval_judge.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("eval_judge", module)
    spec.loader.exec_module(module)
    knowledge = module.load_knowledge()
    out = []
    for folder in ("samples/godot3_project", "samples/godot4_project"):
        for path in sorted((repo / folder).glob("*.gd")):
            result = parse_gdscript(path.name, path.read_bytes())
            declared = declared_names(result.chunks)
            out += [judge_chunk(c, "gdscript", [], knowledge.index, declared) for c in result.chunks]
    return out


@pytest.mark.parametrize("judgment", MADE)
def test_judgment_to_dict_is_the_protobuf_dict(judgment):
    assert convert.judgment_to_dict(judgment) == convert.to_dict(convert.judgment_to_pb(judgment))


@pytest.mark.parametrize("judgment", MADE)
def test_judgment_from_dict_reads_what_the_protobuf_path_reads(judgment):
    stored = convert.to_dict(convert.judgment_to_pb(judgment))
    assert convert.judgment_from_dict(stored) == convert.judgment_from_pb(convert.from_dict(stored, pb.Judgment))


def test_every_sample_judgment_goes_both_ways_as_through_protobuf(repo):
    judgments = _sample_judgments(repo)
    assert len(judgments) > 20 and any(j.migration_notes for j in judgments) and any(j.evidence_kinds for j in judgments)
    for j in judgments:
        stored = convert.to_dict(convert.judgment_to_pb(j))
        assert convert.judgment_to_dict(j) == stored
        assert convert.judgment_from_dict(stored) == convert.judgment_from_pb(convert.from_dict(stored, pb.Judgment))
