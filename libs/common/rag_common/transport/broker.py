"""The broker every service and the gateway connect with: trace context in headers, bounded
metrics, credentials and TLS from settings, and the JetStream layout kept in place.

Nothing here runs at import time: services call ``make_broker`` from ``create_app(settings)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from faststream.nats import NatsBroker
from faststream.nats.security import NatsSecurity, NatsUserPassword
from faststream.prometheus.middleware import PrometheusMiddleware
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from prometheus_client import CollectorRegistry

from rag_common import subjects
from rag_common.settings import ServiceSettings
from rag_common.telemetry import ServiceTelemetry
from rag_common.transport.direct import direct_replies, subscribe_direct
from rag_common.transport.labels import (
    ConsumeMetrics,
    PublishMetrics,
    RagTelemetryMiddleware,
    inject_trace_context,
    metrics_container,
    metrics_provider,
)
from rag_common.transport.pulling import PullConsumer
from rag_common.transport.recovery import JetStreamLayout, attach_layout
from rag_common.transport.streams import ensure_streams


def make_broker(settings: ServiceSettings, telemetry: ServiceTelemetry) -> NatsBroker:
    """A broker that carries trace context in headers, counts every message, and puts its
    streams and consumers back when NATS comes back without them (``rag_common.transport.recovery``).

    ``graceful_timeout`` is the drain on SIGTERM: in-flight handlers get this long to finish; the
    orchestrator's grace period must be longer (deploy/k8s sets it to drain + 10 s).
    """

    async def declare_streams(js: JetStreamContext) -> None:
        await ensure_streams(js, settings)

    layout = JetStreamLayout(
        (subjects.INGEST_STREAM, subjects.QUERY_STREAM, subjects.ASSESSMENT_STREAM, subjects.DLQ_STREAM),
        declare_streams,
    )
    broker = RagBroker(
        settings.nats_url,
        lean=settings.query_consumer == "lean",
        publish_timeout_s=settings.publish_timeout_s,
        registry=telemetry.registry,
        app_name=f"rag-{telemetry.service}",
        middlewares=[
            RagTelemetryMiddleware(tracer_provider=telemetry.tracer_provider),
            PrometheusMiddleware(
                settings_provider_factory=metrics_provider,
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


CoreHandler = Callable[[Msg], None]


class RagBroker(NatsBroker):
    """FastStream's NATS broker plus the query path's lean side (``lean``, ``RAG_QUERY_CONSUMER``):
    the query stages' ``PullConsumer``s and the gateway's answer subscription (``add_core_subscriber``)
    start with the broker and stop before it does, and ``publish_raw`` hands a message to nats-py
    directly, with the trace context in its headers and FastStream's publish metrics, but without
    the middleware chain per message."""

    def __init__(
        self,
        *args: Any,
        lean: bool,
        registry: CollectorRegistry,
        app_name: str,
        publish_timeout_s: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lean = lean
        self.publish_timeout_s = publish_timeout_s
        self.pull_consumers: list[PullConsumer] = []
        self.core_subscribers: list[tuple[str, CoreHandler]] = []
        self._core_subscriptions: list[Subscription] = []
        self.app_name = app_name
        self.drain_timeout_s = float(kwargs.get("graceful_timeout") or 15.0)
        self._metrics = metrics_container(registry)
        self._publish_metrics = PublishMetrics(self._metrics, app_name)
        self._js: JetStreamContext | None = None
        self._pulling = False

    def consume_metrics(self, subject: str) -> ConsumeMetrics:
        return ConsumeMetrics(self._metrics, self.app_name, subject)

    def add_pull_consumer(self, consumer: PullConsumer) -> None:
        self.pull_consumers.append(consumer)

    def add_core_subscriber(self, subject: str, handle: CoreHandler) -> None:
        """Call ``handle`` on every core-NATS message of ``subject`` (wildcards allowed), with nats-py
        alone: no FastStream subscriber, middleware chain or task per message. nats-py's reader
        calls it for one message at a time, in arrival order (``subscribe_direct``: a plain function
        that must not block), and subscribes again after a reconnect. ``handle`` does its own
        tracing and metrics (the gateway's answers: ``rag_gateway.answers``)."""
        self.core_subscribers.append((subject, handle))

    async def start(self) -> None:
        await super().start()
        if not self._pulling:
            self._pulling = True
            await direct_replies(self.connection)
            for subject, handle in self.core_subscribers:
                self._core_subscriptions.append(await subscribe_direct(self.connection, subject, handle))
            for consumer in self.pull_consumers:
                await consumer.start(self.connection)

    async def stop(
        self,
        exc_type: type[BaseException] | None = None,
        exc_val: BaseException | None = None,
        exc_tb: TracebackType | None = None,
    ) -> None:
        """Drain the pull consumers first (their handlers still publish through the connection),
        then FastStream's subscribers and the connection."""
        if self._pulling:
            self._pulling = False
            await asyncio.gather(*(c.stop(self.drain_timeout_s) for c in self.pull_consumers))
            for subscription in self._core_subscriptions:
                with contextlib.suppress(Exception):  # connection already closed: nothing to undo
                    await subscription.unsubscribe()
            self._core_subscriptions.clear()
        self._js = None
        await super().stop(exc_type, exc_val, exc_tb)

    async def publish(  # type: ignore[override]
        self,
        message: Any,
        subject: str,
        headers: dict[str, str] | None = None,
        reply_to: str = "",
        correlation_id: str | None = None,
        stream: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (FastStream's own parameter, passed on)
        **kwargs: Any,
    ) -> Any:
        """FastStream's publish, but a JetStream publish waits ``publish_timeout_s`` for its PubAck
        (``RAG_PUBLISH_TIMEOUT_S``) unless told otherwise: FastStream's 0.5 s failed uploads and
        questions with 503 on a loaded machine although the server stored them moments later."""
        if stream is not None and timeout is None:
            timeout = self.publish_timeout_s
        return await super().publish(
            message,
            subject,
            headers=headers,
            reply_to=reply_to,
            correlation_id=correlation_id,
            stream=stream,
            timeout=timeout,
            **kwargs,
        )

    async def publish_raw(
        self, body: bytes, subject: str, headers: dict[str, str], *, stream: str | None = None
    ) -> None:
        """Publish with nats-py: on JetStream (waiting for its PubAck) when ``stream`` is given,
        else on core NATS. The current span's trace context goes into ``headers``."""
        ok, failed, duration = self._publish_metrics.of(subject)
        started = time.perf_counter()
        try:
            if stream is None:
                await self.connection.publish(subject, body, headers=inject_trace_context(headers))
            else:
                if self._js is None:
                    self._js = self.connection.jetstream()
                await self._js.publish(
                    subject, body, stream=stream, headers=inject_trace_context(headers), timeout=self.publish_timeout_s
                )
        except Exception:
            failed.inc()
            raise
        finally:
            duration.observe(time.perf_counter() - started)
        ok.inc()


def lean_broker(broker: Any) -> RagBroker | None:
    """``broker`` if it runs the query path lean (nats-py), else None (FastStream, e.g. in memory)."""
    return broker if isinstance(broker, RagBroker) and broker.lean else None


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
