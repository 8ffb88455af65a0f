"""The GPU load script's reading of vLLM's /metrics (benchmarks/load_llm.py): the prefix-cache hit rate it reports."""

from __future__ import annotations

import importlib.util
import sys

import pytest

# vLLM's V1 engine exposes counters with `_total` and labels per model and engine; V0 named them `gpu_`.
V1_METRICS = """# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen3-8B"} 12800.0
vllm:prefix_cache_queries_total{engine="1",model_name="Qwen/Qwen3-8B"} 3200.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 9600.0
vllm:prefix_cache_hits_total{engine="1",model_name="Qwen/Qwen3-8B"} 800.0
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
"""
V0_METRICS = """vllm:gpu_prefix_cache_hits 42
vllm:gpu_prefix_cache_queries 100
"""


@pytest.fixture(scope="module")
def load_llm(repo):
    spec = importlib.util.spec_from_file_location("load_llm", repo / "benchmarks" / "load_llm.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["load_llm"] = module
    spec.loader.exec_module(module)
    return module


def test_prefix_cache_counters_sum_every_engine(load_llm):
    assert load_llm.prefix_cache_of_metrics(V1_METRICS) == (10400.0, 16000.0)
    assert load_llm.prefix_cache_of_metrics(V0_METRICS) == (42.0, 100.0)


def test_a_server_without_prefix_cache_counters_reports_none(load_llm):
    # llama.cpp's /metrics has none: the hit rate is printed as "-", not as 0 %.
    llama = "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 512\n"
    assert load_llm.prefix_cache_of_metrics(llama) is None
    assert load_llm.prefix_cache_of_metrics("") is None
