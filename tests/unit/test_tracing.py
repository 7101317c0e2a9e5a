"""OTLP export is on exactly when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: unset, nothing is
installed; set, spans reach a collector (a loopback one here) under the service's name."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider

from runtime.tracing import (
    configure_tracing,
    disable_tracing,
    tracer,
    tracing_enabled,
    tracing_interceptors,
)


class Collector(ThreadingHTTPServer):
    """An OTLP/HTTP trace collector: keeps every export request it is sent."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Receive)
        self.requests: list[tuple[str, ExportTraceServiceRequest]] = []


class _Receive(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.requests.append((self.path, ExportTraceServiceRequest.FromString(body)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass  # a test's output stays quiet


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[TracerProvider]]:
    """The providers `configure_tracing` installs, kept out of OpenTelemetry's global (which
    can be set once per process) and of the exit hooks, and switched off after the test."""
    providers: list[TracerProvider] = []
    monkeypatch.setattr(trace, "set_tracer_provider", providers.append)
    monkeypatch.setattr("runtime.tracing.atexit.register", lambda *_: None)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    yield providers
    for provider in providers:
        provider.shutdown()
    disable_tracing()


def test_without_an_endpoint_nothing_is_traced(
    installed: list[TracerProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert configure_tracing("baton-worker") is False
    assert installed == [] and not tracing_enabled() and tracing_interceptors() == []
    assert isinstance(tracer(), trace.NoOpTracer)


def test_with_an_endpoint_spans_are_exported_by_otlp(
    installed: list[TracerProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = Collector()
    serving = threading.Thread(target=collector.serve_forever, daemon=True)
    serving.start()
    try:
        monkeypatch.setenv(
            "OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector.server_port}"
        )
        assert configure_tracing("baton-gateway") is True
        assert tracing_enabled() and len(tracing_interceptors()) == 2
        with tracer().start_as_current_span("baton.turn"):
            pass
        (provider,) = installed
        assert provider.force_flush(timeout_millis=10_000)
    finally:
        collector.shutdown()
        collector.server_close()
    (path, request), *_ = collector.requests
    assert path == "/v1/traces"
    (resource_spans,) = request.resource_spans
    service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert service["service.name"] == "baton-gateway"
    assert [s.name for scope in resource_spans.scope_spans for s in scope.spans] == ["baton.turn"]
