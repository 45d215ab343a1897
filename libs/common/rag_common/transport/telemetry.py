"""Tracing and metrics set-up, one ``ServiceTelemetry`` per service.

Each service gets its own tracer provider (so its spans carry its ``service.name`` even when the
dev runner hosts every service in one process) and its own Prometheus registry.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Decision, ParentBased, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes
from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from rag_common.config.settings import ServiceSettings

log = logging.getLogger(__name__)

# Outcomes of one handled message, and the kinds of error a stage counts; every combination is
# created at 0 when a stage is registered, so the first failure of each kind shows in increase().
MESSAGE_OUTCOMES = ("ok", "retry", "dead_letter", "rejected")
ERROR_KINDS = ("invalid_message", "permanent", "transient")
DEAD_LETTER_REASONS = ("invalid_message", "permanent", "exhausted")

# Server spans of these routes are not sampled when they start a trace: clients poll them (a
# status poll every 200 ms would otherwise be one trace each) and they say nothing about a request.
UNTRACED_ROUTES = frozenset(
    {
        "GET /healthz",
        "GET /livez",
        "GET /readyz",
        "GET /metrics",
        "GET /v1/documents",
        "GET /v1/documents/{document_id}",
    }
)

STAGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Timer:
    """Milliseconds since creation, frozen by ``stop()``."""

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._ms: float | None = None

    def stop(self) -> None:
        """Freeze the time: what happens after (publishing) is not the stage's."""
        if self._ms is None:
            self._ms = round((time.perf_counter() - self._start) * 1000, 3)

    @property
    def ms(self) -> float:
        """The time so far, or the frozen time once stopped."""
        return self._ms if self._ms is not None else round((time.perf_counter() - self._start) * 1000, 3)


# What each service times with ``ServiceTelemetry.stage`` (default: a stage named after the service).
TIMED_STAGES = {"ingest": ("index",), "gateway": ()}


class MetricsPortError(RuntimeError):
    """A service's metrics port could not be bound (another ``make run``?); says which setting moves it."""


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
            "rag_errors_total",
            "Errors by stage and kind (invalid_message, permanent, transient)",
            ["service", "stage", "kind"],
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "rag_dead_letters_total",
            "Messages sent to the dead-letter stream, by reason (invalid_message, permanent, exhausted)",
            ["service", "stage", "reason"],
            registry=self.registry,
        )
        # Timed stages start at 0 too: a histogram series born at its first observation never
        # shows that observation in rate().
        for stage in TIMED_STAGES.get(self.service, (self.service,)):
            self.stage_seconds.labels(self.service, stage)
        self._server: ThreadingWSGIServer | None = None

    def declare_stage(self, stage: str) -> None:
        """Create every outcome, error and dead-letter series of ``stage`` at 0."""
        for outcome in MESSAGE_OUTCOMES:
            self.messages.labels(self.service, stage, outcome)
        for kind in ERROR_KINDS:
            self.errors.labels(self.service, stage, kind)
        for reason in DEAD_LETTER_REASONS:
            self.dead_letters.labels(self.service, stage, reason)

    @cached_property
    def tracer(self) -> trace.Tracer:
        """One tracer for the service's life (``get_tracer`` builds a new one at every call)."""
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

    def serve_metrics(
        self,
        host: str,
        port: int,
        *,
        ready: Callable[[], Awaitable[dict[str, str]]] | None = None,
        liveness_timeout_s: float = 2.0,
    ) -> int:
        """Serve ``/metrics``, ``/livez`` and ``/readyz`` on their own port (0 turns it off).

        Call from the service's event loop. ``/metrics`` is answered by the server thread, but
        ``/livez`` and ``/readyz`` are answered *through* that event loop: when the loop hangs
        (a blocking call, a deadlock) ``/livez`` fails after ``liveness_timeout_s`` and the
        orchestrator restarts the process. ``ready`` returns named checks; any value other than
        "ok" makes ``/readyz`` answer 503. Returns the bound port.
        """
        if not port:
            return 0
        loop = asyncio.get_running_loop()
        app = health_wsgi_app(make_wsgi_app(self.registry), loop, ready, liveness_timeout_s)
        try:
            server = make_server(host, port, app, ThreadingWSGIServer, handler_class=_QuietHandler)
        except OSError as exc:
            raise MetricsPortError(
                f"{self.service}: cannot serve /metrics on {host}:{port} ({exc.strerror or exc}): set "
                f"RAG_{self.service.upper()}_METRICS_PORT to a free port, or 0 for none"
            ) from exc
        self._server = server
        thread = threading.Thread(target=server.serve_forever, name=f"metrics-{self.service}", daemon=True)
        thread.start()
        bound = int(server.server_address[1])
        log.info("metrics and health of %s on http://%s:%d/metrics|livez|readyz", self.service, host, bound)
        return bound

    def stop_serving(self) -> None:
        """Stop serving ``/metrics`` and health, letting go of the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def health_wsgi_app(
    metrics_app: WSGIApp,
    loop: asyncio.AbstractEventLoop,
    ready: Callable[[], Awaitable[dict[str, str]]] | None,
    timeout_s: float,
) -> WSGIApp:
    """``/livez`` and ``/readyz`` answered by running a coroutine on ``loop``; the rest is metrics."""
    import json

    async def alive() -> dict[str, str]:
        return {"event_loop": "ok"}

    def run_on_loop(check: Callable[[], Awaitable[dict[str, str]]]) -> tuple[int, dict[str, Any]]:
        try:
            future: concurrent.futures.Future[dict[str, str]] = asyncio.run_coroutine_threadsafe(_as_coro(check), loop)
        except RuntimeError:  # the loop is closed
            return 503, {"status": "down", "checks": {"event_loop": "closed"}}
        try:
            checks = future.result(timeout_s)
        except (TimeoutError, concurrent.futures.TimeoutError):
            future.cancel()
            return 503, {"status": "down", "checks": {"event_loop": f"no answer within {timeout_s}s"}}
        except Exception as exc:
            return 503, {"status": "down", "checks": {"error": f"{type(exc).__name__}: {exc}"}}
        bad = sorted(name for name, state in checks.items() if state != "ok")
        return (200 if not bad else 503), {"status": "ok" if not bad else "not_ready", "checks": checks}

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path in ("/livez", "/readyz"):
            status, body = run_on_loop(alive if path == "/livez" or ready is None else ready)
            reason = "OK" if status == 200 else "Service Unavailable"
            start_response(f"{status} {reason}", [("Content-Type", "application/json")])
            return [json.dumps(body).encode()]
        return metrics_app(environ, start_response)

    return app


async def _as_coro(check: Callable[[], Awaitable[dict[str, str]]]) -> dict[str, str]:
    return await check()


class PollingRouteSampler(Sampler):
    """Drop root server spans of polled routes (``UNTRACED_ROUTES``); sample everything else."""

    def should_sample(
        self,
        parent_context: otel_context.Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: trace.TraceState | None = None,
    ) -> SamplingResult:
        """Drop a polled route's root span; sample every other span."""
        if kind == SpanKind.SERVER and name in UNTRACED_ROUTES:
            return SamplingResult(Decision.DROP, None, trace_state)
        return ALWAYS_ON.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        """The sampler's name, as OpenTelemetry logs it."""
        return "PollingRouteSampler"


def _default_processors(settings: ServiceSettings | None) -> list[SpanProcessor]:
    processors: list[SpanProcessor] = []
    if settings is not None and settings.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processors.append(BatchSpanProcessor(OTLPSpanExporter()))  # reads the OTEL_EXPORTER_OTLP_* variables
    if settings is not None and settings.trace_console:
        processors.append(BatchSpanProcessor(ConsoleSpanExporter()))
    return processors


def setup_telemetry(
    service: str, span_processors: Sequence[SpanProcessor] | None = None, *, settings: ServiceSettings | None = None
) -> ServiceTelemetry:
    """Build the telemetry of one service.

    Spans leave the process when the settings say so: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (OTLP over
    HTTP) or ``RAG_TRACE_CONSOLE=1`` (or a test passes ``span_processors``). Without any of them
    nothing is recorded: every span still has its ids, so every answer and log line carries a
    ``trace_id`` and the context travels between the services, but its attributes and events are
    not kept (recording them cost about 0.1 ms of CPU per greeting, docs/BENCHMARKS.md). A trace is
    recorded when the service it starts in exports (the gateway): configure all services alike.
    """
    resource = Resource.create({"service.name": f"rag-{service}", "service.namespace": "rag"})
    processors = [*_default_processors(settings), *(span_processors or [])]
    # With nothing to receive them, spans are not recorded: each still has its trace and span ids,
    # which travel between the services as before, but no attributes or events are kept.
    sampler = ParentBased(root=PollingRouteSampler()) if processors else ALWAYS_OFF
    provider = TracerProvider(resource=resource, sampler=sampler)
    for processor in processors:
        provider.add_span_processor(processor)
    return ServiceTelemetry(service=service, tracer_provider=provider)


def current_trace_id() -> str:
    """Hex trace id of the active span, or "" when none is recording."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else ""
