"""OpenTelemetry: one tracer provider per process; trace context rides in NATS headers."""

from __future__ import annotations

import logging

from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

log = logging.getLogger(__name__)


def setup_tracing(service_name: str, otlp_endpoint: str = "") -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": f"godot-rag-{service_name}"}))
    if otlp_endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError as exc:  # the exporter is an optional extra
            raise RuntimeError(
                "GODOT_RAG_OTLP_ENDPOINT is set but opentelemetry-exporter-otlp-proto-grpc is not installed "
                "(pip install 'godot-rag[otlp]')"
            ) from exc
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint, insecure=True)))
    trace.set_tracer_provider(provider)
    return provider


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def inject_headers(headers: dict[str, str]) -> dict[str, str]:
    propagate.inject(headers)
    return headers


def extract_context(headers: dict[str, str] | None):
    return propagate.extract(headers or {})


def current_trace_id() -> str:
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else ""
