"""Tracing and metrics set-up, one ``ServiceTelemetry`` per service.

Each service gets its own tracer provider (so its spans carry its ``service.name`` even when the
dev runner hosts every service in one process) and its own Prometheus registry.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

log = logging.getLogger(__name__)

STAGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Timer:
    """Milliseconds since creation, frozen by ``stop()``."""

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._ms: float | None = None

    def stop(self) -> None:
        if self._ms is None:
            self._ms = round((time.perf_counter() - self._start) * 1000, 3)

    @property
    def ms(self) -> float:
        return self._ms if self._ms is not None else round((time.perf_counter() - self._start) * 1000, 3)


@dataclass
class ServiceTelemetry:
    """Tracer provider, Prometheus registry and the standard stage metrics of one service."""

    service: str
    tracer_provider: TracerProvider
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.stage_seconds = Histogram(
            "rag_stage_duration_seconds",
            "Time spent in one pipeline stage",
            ["service", "stage"],
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.messages = Counter(
            "rag_messages_handled_total",
            "Messages handled, by outcome (ok, retry, dead_letter, rejected)",
            ["service", "stage", "outcome"],
            registry=self.registry,
        )
        self.errors = Counter(
            "rag_errors_total", "Errors by stage and kind", ["service", "stage", "kind"], registry=self.registry
        )

    @property
    def tracer(self) -> trace.Tracer:
        return self.tracer_provider.get_tracer(f"rag.{self.service}")

    @contextmanager
    def stage(self, stage: str) -> Iterator[Timer]:
        """Time a stage into the histogram; the timer's ``ms`` goes into the outgoing ``timings_ms``."""
        timer = Timer()
        try:
            yield timer
        finally:
            timer.stop()
            self.stage_seconds.labels(self.service, stage).observe(timer.ms / 1000)

    def serve_metrics(self, host: str, port: int) -> None:
        """Expose ``/metrics`` on its own port (0 turns it off)."""
        if port:
            start_http_server(port, addr=host, registry=self.registry)
            log.info("metrics for %s on http://%s:%d/metrics", self.service, host, port)


def _default_processors() -> list[SpanProcessor]:
    processors: list[SpanProcessor] = []
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processors.append(BatchSpanProcessor(OTLPSpanExporter()))
    if os.environ.get("RAG_TRACE_CONSOLE", "").lower() in {"1", "true", "yes"}:
        processors.append(BatchSpanProcessor(ConsoleSpanExporter()))
    return processors


def setup_telemetry(service: str, span_processors: Sequence[SpanProcessor] | None = None) -> ServiceTelemetry:
    """Build the telemetry of one service.

    Spans are always recorded (every answer carries a ``trace_id``); they leave the process only
    when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (OTLP over HTTP) or ``RAG_TRACE_CONSOLE=1``.
    """
    resource = Resource.create({"service.name": f"rag-{service}", "service.namespace": "rag"})
    provider = TracerProvider(resource=resource)
    for processor in [*_default_processors(), *(span_processors or [])]:
        provider.add_span_processor(processor)
    return ServiceTelemetry(service=service, tracer_provider=provider)


def current_trace_id() -> str:
    """Hex trace id of the active span, or "" when none is recording."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else ""
