from __future__ import annotations

from pathlib import Path

import pytest

from godot_rag.settings import SettingsError, load_settings


def test_defaults_and_overrides(tmp_path: Path):
    s = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_MAX_FILE_BYTES": "123"})
    assert s.data_dir == tmp_path and s.max_file_bytes == 123 and s.judge == "rules" and s.host == "127.0.0.1"
    again = load_settings(s.to_env())
    assert again == s


def test_bad_values_are_clear_errors(tmp_path: Path):
    with pytest.raises(SettingsError, match="GODOT_RAG_MAX_FILE_BYTES"):
        load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_MAX_FILE_BYTES": "lots"})
    with pytest.raises(SettingsError, match="GODOT_RAG_JUDGE"):
        load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_JUDGE": "oracle"})


def test_stage_workers_and_embedder_backend(tmp_path: Path):
    s = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_STAGE_WORKERS": "4", "GODOT_RAG_EMBEDDER_BACKEND": "torch"})
    assert s.stage_workers == 4 and s.embedder_backend == "torch"
    assert load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path)}).embedder_backend == "onnx-int8"
    with pytest.raises(SettingsError, match="GODOT_RAG_STAGE_WORKERS"):
        load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_STAGE_WORKERS": "0"})
    with pytest.raises(SettingsError, match="GODOT_RAG_EMBEDDER_BACKEND"):
        load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_EMBEDDER_BACKEND": "openvino"})


def test_each_chunk_stage_can_have_its_own_number_of_processes(tmp_path: Path):
    s = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_STAGE_WORKERS": "2", "GODOT_RAG_RETRIEVER_WORKERS": "3"})
    assert s.workers_for("retriever") == 3
    assert [s.workers_for(stage) for stage in ("parser", "chunker", "judge", "aggregator")] == [2, 2, 2, 2]
    defaults = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path)})
    assert [defaults.workers_for(stage) for stage in ("parser", "chunker", "judge", "aggregator")] == [1, 1, 1, 1]


def test_the_retriever_runs_one_process_per_core_up_to_two_unless_told(tmp_path: Path, monkeypatch):
    for cores, expected in ((1, 1), (2, 2), (16, 2), (None, 1)):
        monkeypatch.setattr("os.cpu_count", lambda cores=cores: cores)
        assert load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path)}).workers_for("retriever") == expected
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_RETRIEVER_WORKERS": "1"}).workers_for("retriever") == 1
    assert load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_STAGE_WORKERS": "4"}).workers_for("retriever") == 4
    with pytest.raises(SettingsError, match="GODOT_RAG_JUDGE_WORKERS"):
        load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_JUDGE_WORKERS": "-1"})


def test_throughput_settings_have_defaults_and_refuse_nonsense(tmp_path: Path):
    s = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path)})
    assert (s.stage_batch_size, s.embedder_threads, s.event_loop) == (32, 1, "uvloop")
    s = load_settings(
        {
            "GODOT_RAG_DATA_DIR": str(tmp_path),
            "GODOT_RAG_STAGE_BATCH_SIZE": "1",
            "GODOT_RAG_EVENT_LOOP": "asyncio",
            "GODOT_RAG_EMBEDDER_THREADS": "0",
        }
    )
    assert (s.stage_batch_size, s.embedder_threads, s.event_loop) == (1, 0, "asyncio")
    for name, value in (("STAGE_BATCH_SIZE", "0"), ("EMBEDDER_THREADS", "-1"), ("EVENT_LOOP", "trio")):
        with pytest.raises(SettingsError, match=f"GODOT_RAG_{name}"):
            load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), f"GODOT_RAG_{name}": value})


def test_each_process_of_a_consumer_holds_its_share_of_max_ack_pending(tmp_path: Path):
    alone = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path)})
    assert alone.process_in_flight_for("retriever", 64) == 64
    two = load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_RETRIEVER_REPLICAS": "2"})
    assert two.process_in_flight_for("retriever", 64) == 32
    assert two.process_in_flight_for("judge", 32) == 32  # another stage's share is its own
    three = load_settings(
        {"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_JUDGE_REPLICAS": "3", "GODOT_RAG_JUDGE_MAX_ACK_PENDING": "8"}
    )
    assert three.process_in_flight_for("judge", 32) == 3  # rounded up: a share is never 0
    assert three.max_ack_pending_for("judge", 32) == 8  # the consumer's own bound is unchanged
    with pytest.raises(SettingsError, match="RETRIEVER_REPLICAS"):
        load_settings({"GODOT_RAG_DATA_DIR": str(tmp_path), "GODOT_RAG_RETRIEVER_REPLICAS": "-1"})
