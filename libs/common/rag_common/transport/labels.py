"""Metric labels and span names of NATS messages, bounded: request-keyed subjects collapse.

FastStream's Prometheus and OpenTelemetry middlewares label by subject; answer subjects carry a
gateway and request id each, so left alone they would make one series (and one span name) per
question. A message gets one span, where it is consumed; publishing and token deltas get none.
"""

from __future__ import annotations

from typing import Any

from faststream.nats.opentelemetry import NatsTelemetryMiddleware
from faststream.nats.opentelemetry.provider import NatsTelemetrySettingsProvider
from faststream.nats.prometheus.provider import NatsMetricsSettingsProvider
from faststream.opentelemetry.middleware import BaseTelemetryMiddleware
from faststream.prometheus import ConsumeAttrs
from nats.aio.msg import Msg
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from rag_common.wire import subjects

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
    """FastStream's metrics labels for a NATS message: its subject without ids (a bounded label set)."""
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
    """FastStream's NATS tracing with bounded span names.

    One span per consumed message, none per publish and none for token deltas.
    """

    def __init__(self, *, tracer_provider: Any) -> None:
        super().__init__(tracer_provider=tracer_provider)
        self._settings_provider_factory = _telemetry_provider

    def __call__(self, msg: Any | None, /, *, context: Any) -> BaseTelemetryMiddleware[Any]:
        """The middleware for one message: FastStream's tracing, with no span for what it publishes."""
        return _NoPublishSpans(
            msg,
            tracer=self._tracer,
            metrics_container=self._metrics,
            settings_provider_factory=self._settings_provider_factory,
            context=context,
        )
