"""OpenTelemetry: one tracer provider per process; trace context rides in NATS headers."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

log = logging.getLogger(__name__)


# The standard OpenTelemetry variables (read here and by the SDK, per the
# OpenTelemetry specification); GODOT_RAG_OTLP_ENDPOINT is the project's alias,
# used when neither endpoint variable is set.
OTEL_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTEL_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTEL_PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


def otlp_traces_endpoint(alias: str = "", environ: Mapping[str, str] | None = None) -> str:
    """Where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT, else the alias.

    Empty = no export. ``OTEL_TRACES_EXPORTER=none`` and ``OTEL_SDK_DISABLED=true`` turn export off whatever is set.
    """
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or env.get("OTEL_TRACES_EXPORTER", "").strip() == "none":
        return ""
    return env.get(OTEL_TRACES_ENDPOINT) or env.get(OTEL_ENDPOINT) or alias


def setup_tracing(service_name: str, otlp_endpoint: str = "", environ: Mapping[str, str] | None = None) -> TracerProvider:
    """One tracer provider for the process, exporting over OTLP/gRPC when an endpoint is configured.

    ``service.name`` is ``godot-rag-<service>`` unless OTEL_SERVICE_NAME says
    otherwise (OTEL_RESOURCE_ATTRIBUTES adds attributes). The exporter reads
    the other OTEL_EXPORTER_OTLP_* variables itself (headers, certificate,
    compression, timeout); an ``http://`` endpoint means plain text.
    """
    env = os.environ if environ is None else environ
    endpoint = otlp_traces_endpoint(otlp_endpoint, env)
    for key in OTEL_PROTOCOLS:
        protocol = env.get(key, "").strip()
        if endpoint and protocol and protocol != "grpc":
            # Only the gRPC exporter is installed; an HTTP collector would silently get nothing.
            raise RuntimeError(f"{key}={protocol!r}: godot-rag exports spans over OTLP/gRPC only (use port 4317 and 'grpc')")
    # An explicit attribute would beat OTEL_SERVICE_NAME inside Resource.create, so it is applied here.
    name = env.get("OTEL_SERVICE_NAME") or f"godot-rag-{service_name}"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if endpoint:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        log.info("exporting spans over OTLP/gRPC to %s", endpoint)
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
