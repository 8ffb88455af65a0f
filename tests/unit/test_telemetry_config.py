"""OTLP export is configured by the standard OTEL_* variables, with GODOT_RAG_OTLP_ENDPOINT as an alias."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

from godot_rag.infra import telemetry
from godot_rag.settings import SettingsError, load_settings


@pytest.mark.parametrize(
    "env, alias, expected",
    [
        ({}, "", ""),
        ({}, "http://collector:4317", "http://collector:4317"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317"}, "http://alias:4317", "http://otel:4317"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://traces:4317"},
            "",
            "https://traces:4317",
        ),
        ({"OTEL_TRACES_EXPORTER": "none"}, "http://alias:4317", ""),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317"}, "", ""),
    ],
)
def test_endpoint_resolution(env, alias, expected):
    assert telemetry.otlp_traces_endpoint(alias, env) == expected


def exporters(provider) -> list:
    processors = provider._active_span_processor._span_processors
    return [getattr(p, "span_exporter", None) or p._batch_processor._exporter for p in processors]


@pytest.fixture(autouse=True)
def keep_global_provider(monkeypatch):
    # setup_tracing sets the global provider once per process; let each test set its own.
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", trace.Once())
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)


def test_setup_tracing_exports_over_grpc_when_an_endpoint_is_set():
    provider = telemetry.setup_tracing("judge", "", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"})
    try:
        found = exporters(provider)
        assert len(found) == 1 and isinstance(found[0], OTLPSpanExporter)
        assert provider.resource.attributes["service.name"] == "godot-rag-judge"
    finally:
        provider.shutdown()


def test_setup_tracing_without_endpoint_keeps_spans_in_process():
    provider = telemetry.setup_tracing("parser", "", {})
    assert exporters(provider) == []


def test_otel_service_name_overrides_the_default():
    provider = telemetry.setup_tracing("judge", "", {"OTEL_SERVICE_NAME": "godot-rag-judge-gpu-pool"})
    assert provider.resource.attributes["service.name"] == "godot-rag-judge-gpu-pool"


def test_an_http_protocol_is_refused_rather_than_dropping_spans():
    with pytest.raises(RuntimeError, match="OTLP/gRPC only"):
        telemetry.setup_tracing("judge", "http://c:4318", {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})


def test_new_operations_settings_load_and_validate():
    s = load_settings(
        {
            "GODOT_RAG_DATA_DIR": "/tmp/x",
            "GODOT_RAG_LOG_FORMAT": "json",
            "GODOT_RAG_METRICS_PORT": "9090",
            "GODOT_RAG_JUDGE_MAX_ACK_PENDING": "64",
            "GODOT_RAG_AUTH_TOKEN": "t0k",
        }
    )
    assert (s.log_format, s.metrics_port, s.judge_max_ack_pending, s.auth_token) == ("json", 9090, 64, "t0k")
    assert s.parser_max_ack_pending == 0
    with pytest.raises(SettingsError):
        load_settings({"GODOT_RAG_DATA_DIR": "/tmp/x", "GODOT_RAG_LOG_FORMAT": "xml"})
    with pytest.raises(SettingsError):
        load_settings({"GODOT_RAG_DATA_DIR": "/tmp/x", "GODOT_RAG_RETRIEVER_MAX_ACK_PENDING": "-1"})
