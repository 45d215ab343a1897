"""Trace export is configured from the environment, through the settings: OTLP when an endpoint is set,
console when asked, else nothing."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_common.transport.telemetry import current_trace_id, setup_telemetry
from rag_router.settings import RouterSettings

pytestmark = pytest.mark.unit


def exporters(service: str) -> list[object]:
    provider = setup_telemetry(service, settings=RouterSettings()).tracer_provider
    processors = provider._active_span_processor._span_processors  # the SDK keeps no public list
    return [getattr(p, "span_exporter", None) or getattr(p, "_exporter", None) for p in processors]


def test_otlp_exporter_when_endpoint_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    found = exporters("router")
    assert any(isinstance(e, OTLPSpanExporter) for e in found), found


def test_console_exporter_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv("RAG_TRACE_CONSOLE", "1")
    found = exporters("router")
    assert [type(e) for e in found] == [ConsoleSpanExporter], found


def test_no_exporter_by_default_so_spans_carry_ids_but_are_not_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("RAG_TRACE_CONSOLE", raising=False)
    telemetry = setup_telemetry("router", settings=RouterSettings())
    assert exporters("router") == []
    with telemetry.tracer.start_as_current_span("x") as outer:
        assert outer.get_span_context().trace_id != 0  # the answer's trace_id and the log lines' still exist
        assert current_trace_id() == format(outer.get_span_context().trace_id, "032x")
        assert not outer.is_recording()  # nothing would receive its attributes
        with telemetry.tracer.start_as_current_span("y") as inner:
            assert inner.get_span_context().trace_id == outer.get_span_context().trace_id
    assert telemetry.tracer_provider.resource.attributes["service.name"] == "rag-router"


def test_spans_are_recorded_when_something_receives_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("RAG_TRACE_CONSOLE", raising=False)
    received = InMemorySpanExporter()
    telemetry = setup_telemetry("router", [SimpleSpanProcessor(received)], settings=RouterSettings())
    with telemetry.tracer.start_as_current_span("x") as span:
        assert span.is_recording()
        span.set_attribute("rag.flagged", True)
    assert [(s.name, dict(s.attributes or {})) for s in received.get_finished_spans()] == [("x", {"rag.flagged": True})]
