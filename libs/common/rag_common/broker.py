"""Broker factory, JetStream layout and the one way every stage handles a message.

Nothing here runs at import time: services call these from ``create_app(settings)``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from faststream.nats import JStream, NatsBroker, NatsMessage
from faststream.nats.opentelemetry import NatsTelemetryMiddleware
from faststream.nats.prometheus.provider import NatsMetricsSettingsProvider
from faststream.prometheus import ConsumeAttrs
from faststream.prometheus.middleware import PrometheusMiddleware
from nats.errors import NotJSMessageError
from nats.js import JetStreamContext
from nats.js.api import (
    ConsumerConfig,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError
from pydantic import BaseModel, ValidationError

from rag_common import subjects
from rag_common.messages import DeadLetter
from rag_common.settings import ServiceSettings
from rag_common.telemetry import ServiceTelemetry

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

INGEST_JSTREAM = JStream(subjects.INGEST_STREAM, declare=False)
QUERY_JSTREAM = JStream(subjects.QUERY_STREAM, declare=False)

RETRY_BACKOFF_S = (0.5, 2.0, 5.0, 15.0)


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


def _metrics_provider(msg: Any) -> _BoundedMetricsProvider | None:
    return _BoundedMetricsProvider() if msg is None or hasattr(msg, "subject") else None


def make_broker(settings: ServiceSettings, telemetry: ServiceTelemetry) -> NatsBroker:
    """A broker that carries trace context in headers and counts every message."""
    return NatsBroker(
        settings.nats_url,
        middlewares=[
            NatsTelemetryMiddleware(tracer_provider=telemetry.tracer_provider),
            PrometheusMiddleware(
                settings_provider_factory=_metrics_provider,
                registry=telemetry.registry,
                app_name=f"rag-{telemetry.service}",
            ),
        ],
        graceful_timeout=15.0,
        logger=logging.getLogger(f"rag.{telemetry.service}"),
        log_level=logging.DEBUG,  # per-message "Received"/"Processed" lines only when debugging
        max_reconnect_attempts=-1,
    )


def stream_configs(settings: ServiceSettings) -> list[StreamConfig]:
    """The three streams: durable ingest work, short-lived query stages, and dead letters."""
    return [
        StreamConfig(
            name=subjects.INGEST_STREAM,
            subjects=[subjects.INGEST_SUBJECTS],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            num_replicas=settings.js_replicas,
            duplicate_window=120.0,
        ),
        StreamConfig(
            name=subjects.QUERY_STREAM,
            subjects=[subjects.QUERY_SUBJECTS],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.MEMORY,
            max_age=300.0,
            num_replicas=settings.js_replicas,
            duplicate_window=120.0,
            discard=DiscardPolicy.OLD,
        ),
        StreamConfig(
            name=subjects.DLQ_STREAM,
            subjects=[subjects.DLQ_SUBJECTS],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=14 * 24 * 3600.0,
            num_replicas=settings.js_replicas,
        ),
    ]


async def ensure_streams(js: JetStreamContext, settings: ServiceSettings) -> None:
    """Create the streams, or bring an existing one to our configuration (idempotent)."""
    for config in stream_configs(settings):
        try:
            await js.add_stream(config=config)
        except BadRequestError:
            await js.update_stream(config=config)
    await drop_push_consumers(js)


async def drop_push_consumers(js: JetStreamContext) -> list[str]:
    """Delete push consumers left in our work-queue streams by an older version.

    Every consumer we create is a durable pull consumer; a push consumer of the same name would
    make the pull subscriber wait forever without an error. Nothing is lost: the messages stay in
    the stream and the pull consumer is created in its place.
    """
    dropped = []
    for stream in (subjects.INGEST_STREAM, subjects.QUERY_STREAM):
        for info in await js.consumers_info(stream):
            if info.config.deliver_subject and info.name:
                await js.delete_consumer(stream, info.name)
                log.warning("deleted push consumer %s/%s left by an older version", stream, info.name)
                dropped.append(f"{stream}/{info.name}")
    return dropped


def consumer_config(settings: ServiceSettings, *, ack_wait: float) -> ConsumerConfig:
    """Explicit acks, bounded redeliveries; retries are spaced by ``nak(delay)``."""
    return ConsumerConfig(
        ack_wait=ack_wait, max_deliver=settings.max_deliver, max_ack_pending=max(64, settings.concurrency * 4)
    )


class PermanentError(Exception):
    """A failure that retrying cannot fix (bad input, unknown collection): no redelivery."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


FailureHook = Callable[[dict[str, Any], str, str, int], Awaitable[None]]


def _deliveries(msg: NatsMessage) -> int:
    """How many times JetStream has delivered this message (1 for a core-NATS or test message)."""
    try:
        return int(msg.raw_message.metadata.num_delivered)
    except NotJSMessageError:
        return 1


def _raw_fields(body: bytes) -> dict[str, Any]:
    """Best-effort fields of a message that failed validation, to tell its sender what happened."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


async def process_message(
    msg: NatsMessage,
    model: type[M],
    work: Callable[[M], Awaitable[None]],
    *,
    broker: NatsBroker,
    telemetry: ServiceTelemetry,
    stage: str,
    area: str,
    max_deliver: int,
    on_failure: FailureHook,
) -> None:
    """Validate, run and acknowledge one JetStream message; nothing that fails is lost.

    - a body that does not validate is dead-lettered at once (retrying cannot fix it);
    - a ``PermanentError`` is reported to ``on_failure`` and dead-lettered at once;
    - any other error is retried with backoff; after ``max_deliver`` attempts it is reported and
      dead-lettered. Dead letters keep the original payload so they can be replayed.
    """
    deliveries = _deliveries(msg)
    try:
        payload = model.model_validate_json(msg.body)
    except ValidationError as exc:
        error = f"invalid {model.__name__} message: {exc.errors(include_url=False)[:3]}"
        await _dead_letter(msg, broker, area, stage, error, deliveries)
        await on_failure(_raw_fields(msg.body), "invalid_message", error, 400)
        telemetry.messages.labels(telemetry.service, stage, "rejected").inc()
        await msg.reject()
        return
    try:
        await work(payload)
    except PermanentError as exc:
        await _dead_letter(msg, broker, area, stage, f"{exc.code}: {exc.message}", deliveries)
        await on_failure(payload.model_dump(), exc.code, exc.message, exc.status)
        telemetry.messages.labels(telemetry.service, stage, "rejected").inc()
        telemetry.errors.labels(telemetry.service, stage, exc.code).inc()
        await msg.reject()
        return
    except Exception as exc:
        telemetry.errors.labels(telemetry.service, stage, type(exc).__name__).inc()
        if deliveries < max_deliver:
            log.warning("%s failed (attempt %d/%d), will retry: %r", stage, deliveries, max_deliver, exc)
            telemetry.messages.labels(telemetry.service, stage, "retry").inc()
            await msg.nack(delay=RETRY_BACKOFF_S[min(deliveries - 1, len(RETRY_BACKOFF_S) - 1)])
            return
        log.exception("%s failed after %d attempts; dead-lettered", stage, deliveries)
        error = f"{type(exc).__name__}: {exc}"
        await _dead_letter(msg, broker, area, stage, error, deliveries)
        await on_failure(payload.model_dump(), "stage_failed", f"{stage} failed: {error}", 503)
        telemetry.messages.labels(telemetry.service, stage, "dead_letter").inc()
        await msg.reject()
        return
    telemetry.messages.labels(telemetry.service, stage, "ok").inc()
    await msg.ack()


async def _dead_letter(
    msg: NatsMessage, broker: NatsBroker, area: str, stage: str, error: str, deliveries: int
) -> None:
    raw = _raw_fields(msg.body)
    letter = DeadLetter(
        subject=msg.raw_message.subject,
        error=error,
        payload=msg.body.decode("utf-8", errors="replace"),
        request_id=str(raw.get("request_id", "")),
        deliveries=deliveries,
    )
    await broker.publish(letter, subjects.dlq_subject(area, stage), stream=subjects.DLQ_STREAM)
