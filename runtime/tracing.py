"""OpenTelemetry traces: on only when asked, so an untraced process pays nothing.

`configure_tracing()` exports spans by OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the
exporter reads the rest of the standard `OTEL_*` variables itself). Once tracing is on, every
Temporal client Baton builds carries temporalio's `TracingInterceptor` (runtime.temporal_client),
which reaches the workers built on it, and the gateway opens a span per caller turn: one trace
follows an utterance from end of speech through the Update and the STT, model, tool and TTS
activities to the first audio frame sent back. Tests enable it with their own provider.
"""

from __future__ import annotations

import atexit

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from temporalio.contrib.opentelemetry import TracingInterceptor

from runtime.settings import settings
from runtime.turn_traces import TurnTraces

TRACER_NAME = "baton"
_provider: TracerProvider | None = None


def configure_tracing(service_name: str) -> bool:
    """Export traces by OTLP if `OTEL_EXPORTER_OTLP_ENDPOINT` is set; True when on.

    `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` picks the gRPC exporter, anything else OTLP over HTTP
    (the protocol the OpenTelemetry spec makes the default). `OTEL_SERVICE_NAME` overrides
    `service_name`."""
    config = settings()
    if config.otlp_endpoint is None:
        return False
    exporter: SpanExporter
    if config.otlp_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpanExporter,
        )

        exporter = HttpSpanExporter()
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    enable_tracing(provider)
    atexit.register(provider.shutdown)  # flush the last spans
    return True


def enable_tracing(provider: TracerProvider) -> None:
    """Trace through `provider` from now on (clients connected afterwards carry the
    interceptor)."""
    global _provider
    _provider = provider


def disable_tracing() -> None:
    global _provider
    _provider = None


def tracing_enabled() -> bool:
    return _provider is not None


def tracer() -> trace.Tracer:
    """Baton's tracer: the enabled provider's, or one that records nothing."""
    if _provider is None:
        return trace.NoOpTracer()
    return _provider.get_tracer(TRACER_NAME)


def tracing_interceptors() -> list[TracingInterceptor | TurnTraces]:
    """The interceptor a client needs for its calls and its workers to be traced, if on."""
    if _provider is None:
        return []
    # Order matters: TurnTraces runs inside TracingInterceptor's activity start, so the header
    # it sets (the utterance's trace) is the one the activity sees.
    return [TracingInterceptor(tracer()), TurnTraces()]
