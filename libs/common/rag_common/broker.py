"""Broker factory, JetStream layout and the one way every stage handles a message.

Nothing here runs at import time: services call these from ``create_app(settings)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from faststream.nats import JStream, NatsBroker, NatsMessage
from faststream.nats.opentelemetry import NatsTelemetryMiddleware
from faststream.nats.opentelemetry.provider import NatsTelemetrySettingsProvider
from faststream.nats.prometheus.provider import NatsMetricsSettingsProvider
from faststream.nats.security import NatsSecurity, NatsUserPassword
from faststream.prometheus import ConsumeAttrs
from faststream.prometheus.middleware import PrometheusMiddleware
from nats.aio.msg import Msg
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
from rag_common.recovery import JetStreamLayout, attach_layout
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


class _BoundedTelemetryProvider(NatsTelemetrySettingsProvider):
    """Span names without request ids: ``rag.answer.*.*.final process``; the id is an attribute."""

    def get_consume_destination_name(self, msg: Any) -> str:
        return metric_subject(super().get_consume_destination_name(msg))

    def get_consume_attrs_from_message(self, msg: Any) -> dict[str, Any]:
        attrs = super().get_consume_attrs_from_message(msg)
        attrs.update(_request_id_attr(msg.raw_message.subject))
        return attrs

    def get_publish_destination_name(self, cmd: Any) -> str:
        return metric_subject(super().get_publish_destination_name(cmd))

    def get_publish_attrs_from_cmd(self, cmd: Any) -> dict[str, Any]:
        attrs = super().get_publish_attrs_from_cmd(cmd)
        attrs.update(_request_id_attr(cmd.destination))
        return attrs


def _request_id_attr(subject: str) -> dict[str, str]:
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


class RagTelemetryMiddleware(NatsTelemetryMiddleware):
    """FastStream's NATS tracing with bounded span names and no spans for token deltas."""

    def __init__(self, *, tracer_provider: Any) -> None:
        super().__init__(tracer_provider=tracer_provider)
        self._settings_provider_factory = _telemetry_provider


def make_broker(settings: ServiceSettings, telemetry: ServiceTelemetry) -> NatsBroker:
    """A broker that carries trace context in headers, counts every message, and puts its
    streams and consumers back when NATS comes back without them (``rag_common.recovery``).

    ``graceful_timeout`` is the drain on SIGTERM: in-flight handlers get this long to finish; the
    orchestrator's grace period must be longer (deploy/k8s sets it to drain + 10 s).
    """

    async def declare_streams(js: JetStreamContext) -> None:
        await ensure_streams(js, settings)

    layout = JetStreamLayout((subjects.INGEST_STREAM, subjects.QUERY_STREAM, subjects.DLQ_STREAM), declare_streams)
    broker = NatsBroker(
        settings.nats_url,
        middlewares=[
            RagTelemetryMiddleware(tracer_provider=telemetry.tracer_provider),
            PrometheusMiddleware(
                settings_provider_factory=_metrics_provider,
                registry=telemetry.registry,
                app_name=f"rag-{telemetry.service}",
            ),
        ],
        graceful_timeout=settings.drain_timeout_s,
        security=nats_security(settings),
        logger=logging.getLogger(f"rag.{telemetry.service}"),
        log_level=logging.DEBUG,  # per-message "Received"/"Processed" lines only when debugging
        max_reconnect_attempts=-1,
        reconnect_time_wait=1,
        reconnected_cb=layout.reconnected,
        closed_cb=layout.closed,
    )
    attach_layout(broker, layout)
    return broker


def nats_security(settings: ServiceSettings) -> NatsSecurity | None:
    """User and password (``NATS_USER``/``NATS_PASSWORD``) and TLS (``tls://`` or a CA file), if set."""
    context = None
    if settings.nats_tls_ca_file or settings.nats_url.startswith("tls://"):
        ca = str(settings.nats_tls_ca_file) if settings.nats_tls_ca_file else None
        context = ssl.create_default_context(cafile=ca)
        if settings.nats_tls_cert_file and settings.nats_tls_key_file:
            context.load_cert_chain(str(settings.nats_tls_cert_file), str(settings.nats_tls_key_file))
    if settings.nats_user and settings.nats_password:
        return NatsUserPassword(settings.nats_user, settings.nats_password.get_secret_value(), ssl_context=context)
    return NatsSecurity(ssl_context=context) if context else None


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
    """Explicit acks, bounded redeliveries; retries are spaced by ``nak(delay)``.

    ``max_ack_pending`` is shared by every replica of the consumer, so it is sized for the most
    replicas the autoscaler may start (``max_replicas`` x ``concurrency``): a smaller limit would
    leave the replicas beyond it without work however long the queue grows.
    """
    return ConsumerConfig(ack_wait=ack_wait, max_deliver=settings.max_deliver, max_ack_pending=settings.max_ack_pending)


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
    heartbeat_s: float | None = None,
) -> None:
    """Validate, run and acknowledge one JetStream message; nothing that fails is lost.

    - a body that does not validate is dead-lettered at once (retrying cannot fix it);
    - a ``PermanentError`` is reported to ``on_failure`` and dead-lettered at once;
    - any other error is retried with backoff; after ``max_deliver`` attempts it is reported and
      dead-lettered. Dead letters keep the original payload so they can be replayed.

    While the work runs, JetStream is told every ``heartbeat_s`` that the message is in progress,
    so a slow message (a long document, a slow model) is not redelivered to a second worker while
    a dead worker's message still is, after the consumer's ack wait.
    """
    deliveries = _deliveries(msg)
    try:
        payload = model.model_validate_json(msg.body)
    except ValidationError as exc:
        error = f"invalid {model.__name__} message: {exc.errors(include_url=False)[:3]}"
        await _dead_letter(msg, broker, area, stage, error, deliveries)
        await on_failure(_raw_fields(msg.body), "invalid_message", error, 400)
        telemetry.messages.labels(telemetry.service, stage, "rejected").inc()
        telemetry.errors.labels(telemetry.service, stage, "invalid_message").inc()
        telemetry.dead_letters.labels(telemetry.service, stage, "invalid_message").inc()
        await msg.reject()
        return
    try:
        async with _in_progress(msg, heartbeat_s):
            await work(payload)
    except asyncio.CancelledError:
        # Shut down mid-message (drain timeout): hand it back now instead of after ack_wait.
        await asyncio.shield(msg.nack())
        raise
    except PermanentError as exc:
        await _dead_letter(msg, broker, area, stage, f"{exc.code}: {exc.message}", deliveries)
        await on_failure(payload.model_dump(), exc.code, exc.message, exc.status)
        log.warning("%s rejected %s: %s", stage, exc.code, exc.message)
        telemetry.messages.labels(telemetry.service, stage, "rejected").inc()
        telemetry.errors.labels(telemetry.service, stage, "permanent").inc()
        telemetry.dead_letters.labels(telemetry.service, stage, "permanent").inc()
        await msg.reject()
        return
    except Exception as exc:
        telemetry.errors.labels(telemetry.service, stage, "transient").inc()
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
        telemetry.dead_letters.labels(telemetry.service, stage, "exhausted").inc()
        await msg.reject()
        return
    telemetry.messages.labels(telemetry.service, stage, "ok").inc()
    await msg.ack()


@contextlib.asynccontextmanager
async def _in_progress(msg: NatsMessage, every_s: float | None) -> AsyncIterator[None]:
    """Extend the message's ack wait every ``every_s`` seconds while the block runs."""
    if not every_s:
        yield
        return

    async def beat() -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await msg.in_progress()
            except Exception as exc:  # NATS away for a moment: the next beat tries again
                log.debug("in-progress for %s not sent: %r", msg.raw_message.subject, exc)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _dead_letter(
    msg: NatsMessage, broker: NatsBroker, area: str, stage: str, error: str, deliveries: int
) -> None:
    raw = _raw_fields(msg.body)
    query = raw.get("query")  # query-path messages carry their ids in the question
    ids = query if isinstance(query, dict) else raw
    letter = DeadLetter(
        subject=msg.raw_message.subject,
        error=error,
        payload=msg.body.decode("utf-8", errors="replace"),
        request_id=str(ids.get("request_id", "")),
        deliveries=deliveries,
    )
    await broker.publish(letter, subjects.dlq_subject(area, stage), stream=subjects.DLQ_STREAM)
