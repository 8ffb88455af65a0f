"""The settings the embedded supervisor gives its service processes."""

from __future__ import annotations

from pathlib import Path

from godot_rag.settings import load_settings
from godot_rag.supervisor import stage_replicas


def test_each_process_of_a_stage_holds_its_share_of_the_consumers_messages(tmp_path: Path):
    settings = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_RETRIEVER_WORKERS": "3"})
    child = load_settings(settings.with_overrides(**stage_replicas(settings)).to_env())
    assert (child.retriever_replicas, child.judge_replicas, child.parser_replicas) == (3, 1, 1)
    assert child.process_in_flight_for("retriever", 64) == 22
    assert child.process_in_flight_for("judge", 32) == 32
