"""Metric labels and span names of NATS messages, bounded: request-keyed subjects collapse.

FastStream's Prometheus and OpenTelemetry middlewares label by subject; answer subjects carry a
gateway and request id each, so left alone they would make one series (and one span name) per
question. A message gets one span, where it is consumed; publishing and token deltas get none.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from faststream.nats.opentelemetry import NatsTelemetryMiddleware
from faststream.nats.opentelemetry.provider import NatsTelemetrySettingsProvider
from faststream.nats.prometheus.provider import NatsMetricsSettingsProvider
from faststream.opentelemetry.middleware import BaseTelemetryMiddleware
from faststream.prometheus import ConsumeAttrs
from faststream.prometheus.container import MetricsContainer
from nats.aio.msg import Msg
from opentelemetry.semconv.trace import SpanAttributes
from opentelemetry.trace import Span, SpanKind, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from prometheus_client import CollectorRegistry

from rag_common import subjects

_TRACE_CONTEXT = TraceContextTextMapPropagator()


def metric_subject(subject: str) -> str:
    """Per-request answer subjects collapse to one label value, so metrics stay bounded."""
    if subject.startswith(subjects.ANSWER_PREFIX + "."):
        return f"{subjects.ANSWER_PREFIX}.*.*.{subject.rsplit('.', 1)[-1]}"
    return subject


class _BoundedMetricsProvider(NatsMetricsSettingsProvider):
    """FastStream's NATS metrics labels, with request-keyed subjects collapsed."""

    def get_consume_attrs_from_message(self, msg: Any) -> ConsumeAttrs:
        attrs = super().get_consume_attrs_from_message(msg)
        attrs["destination_name"] = metric_subject(attrs["destination_name"])
        return attrs

    def get_publish_destination_name_from_cmd(self, cmd: Any) -> str:
        return metric_subject(super().get_publish_destination_name_from_cmd(cmd))


def metrics_provider(msg: Any) -> _BoundedMetricsProvider | None:
    return _BoundedMetricsProvider() if msg is None or hasattr(msg, "subject") else None


class _BoundedTelemetryProvider(NatsTelemetrySettingsProvider):
    """Span names without request ids: ``rag.answer.*.*.final process``; the id is an attribute."""

    def get_consume_destination_name(self, msg: Any) -> str:
        return metric_subject(super().get_consume_destination_name(msg))

    def get_consume_attrs_from_message(self, msg: Any) -> dict[str, Any]:
        attrs = super().get_consume_attrs_from_message(msg)
        attrs.update(request_id_attrs(msg.raw_message.subject))
        return attrs

    def get_publish_destination_name(self, cmd: Any) -> str:
        return metric_subject(super().get_publish_destination_name(cmd))

    def get_publish_attrs_from_cmd(self, cmd: Any) -> dict[str, Any]:
        attrs = super().get_publish_attrs_from_cmd(cmd)
        attrs.update(request_id_attrs(cmd.destination))
        return attrs


def request_id_attrs(subject: str) -> dict[str, str]:
    """The gateway and request ids of an answer subject, as span attributes (none for other subjects)."""
    if subject.startswith(subjects.ANSWER_PREFIX + "."):
        parts = subject.split(".")
        if len(parts) >= 5:
            return {"rag.gateway_id": parts[-3], "rag.request_id": parts[-2]}
    return {}


def _telemetry_provider(msg: Any) -> _BoundedTelemetryProvider | None:
    """Trace every message except token deltas: one span per streamed token is noise, not insight."""
    if isinstance(msg, Msg):
        if msg.subject.startswith(subjects.ANSWER_PREFIX + ".") and msg.subject.endswith(".delta"):
            return None
        return _BoundedTelemetryProvider()
    if msg is None:
        return _BoundedTelemetryProvider()
    return None  # batches, key-value and object-store watches


class _NoPublishSpans(BaseTelemetryMiddleware[Any]):
    """FastStream's per-message tracing, except that a publish makes no span of its own.

    FastStream opens two spans per publish from a handler ("create" and "publish"), four per stage
    hop with the consumer's; here a publish only writes the W3C trace context of the current span
    (the publishing handler's "process" span, or the gateway's HTTP request) into the headers, so
    the consumer's "process" span is its child and the trace stays one tree, with one span per hop.
    """

    async def publish_scope(self, call_next: Any, msg: Any) -> Any:
        _TRACE_CONTEXT.inject(msg.headers)
        return await call_next(msg)


class RagTelemetryMiddleware(NatsTelemetryMiddleware):
    """FastStream's NATS tracing with bounded span names, one span per consumed message, none per
    publish and none for token deltas."""

    def __init__(self, *, tracer_provider: Any) -> None:
        super().__init__(tracer_provider=tracer_provider)
        self._settings_provider_factory = _telemetry_provider

    def __call__(self, msg: Any | None, /, *, context: Any) -> BaseTelemetryMiddleware[Any]:
        return _NoPublishSpans(
            msg,
            tracer=self._tracer,
            metrics_container=self._metrics,
            settings_provider_factory=self._settings_provider_factory,
            context=context,
        )


MESSAGING_SYSTEM = "nats"


class ConsumeMetrics:
    """FastStream's received-message series of one subject (the same names and labels its
    Prometheus middleware writes), with every label child bound once: the lean query path counts
    its messages where the dashboards already look, for a few dict lookups less per message."""

    __slots__ = ("_exceptions", "_labels", "duration", "in_process", "received", "size", "status")

    def __init__(self, container: MetricsContainer, app_name: str, subject: str) -> None:
        labels = (app_name, MESSAGING_SYSTEM, metric_subject(subject))
        self._labels = labels
        self.received = container.received_messages_total.labels(*labels)
        self.size = container.received_messages_size_bytes.labels(*labels)
        self.in_process = container.received_messages_in_process.labels(*labels)
        self.duration = container.received_processed_messages_duration_seconds.labels(*labels)
        processed = container.received_processed_messages_total
        self.status = {s: processed.labels(*labels, s) for s in ("acked", "nacked", "rejected", "error")}
        self._exceptions = container.received_processed_messages_exceptions_total

    def exception(self, exc: BaseException) -> None:
        self._exceptions.labels(*self._labels, type(exc).__name__).inc()


class PublishMetrics:
    """FastStream's published-message series (names and labels of its middleware), children bound
    once per destination."""

    def __init__(self, container: MetricsContainer, app_name: str) -> None:
        self._container = container
        self._app_name = app_name
        self._children: dict[str, tuple[Any, Any, Any]] = {}

    def of(self, subject: str) -> tuple[Any, Any, Any]:
        """(published ok, published with an error, duration) of one destination."""
        destination = metric_subject(subject)  # per-request answer subjects share one set
        children = self._children.get(destination)
        if children is None:
            labels = (self._app_name, MESSAGING_SYSTEM, destination)
            total = self._container.published_messages_total
            children = (
                total.labels(*labels, "success"),
                total.labels(*labels, "error"),
                self._container.published_messages_duration_seconds.labels(*labels),
            )
            self._children[destination] = children
        return children


def metrics_container(registry: CollectorRegistry) -> MetricsContainer:
    """FastStream's metric objects in ``registry`` (the ones its middleware registered, if it has)."""
    return MetricsContainer(registry, custom_label_names=())


def inject_trace_context(headers: dict[str, str]) -> dict[str, str]:
    """Write the current span's W3C trace context into ``headers`` (what a publish carries)."""
    _TRACE_CONTEXT.inject(headers)
    return headers


def extract_trace_context(headers: dict[str, str] | None) -> Any:
    """The sender's trace context from a message's headers (empty without them)."""
    return _TRACE_CONTEXT.extract(headers or {})


def consume_span(
    tracer: Tracer, name: str, raw: Msg, attributes: dict[str, Any] | None = None
) -> AbstractContextManager[Span]:
    """The one span a message consumed with nats-py gets, "<subject> process" as FastStream names
    it: a child of the sender's trace context (from the message's headers), current while the
    message is handled, so what the handler publishes carries it on."""
    return tracer.start_as_current_span(
        name,
        context=extract_trace_context(raw.headers),
        kind=SpanKind.CONSUMER,
        attributes={
            SpanAttributes.MESSAGING_SYSTEM: MESSAGING_SYSTEM,
            SpanAttributes.MESSAGING_DESTINATION_NAME: raw.subject,
            SpanAttributes.MESSAGING_OPERATION: "process",
            SpanAttributes.MESSAGING_MESSAGE_PAYLOAD_SIZE_BYTES: len(raw.data),
            **(attributes or {}),
        },
    )
