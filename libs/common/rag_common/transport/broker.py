"""The broker every service and the gateway connect with.

Trace context in headers, bounded metrics, credentials and TLS from settings, and the JetStream
layout kept in place.

Nothing here runs at import time: services call ``make_broker`` from ``create_app(settings)``.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from faststream.nats import NatsBroker
from faststream.nats.security import NatsSecurity, NatsUserPassword
from faststream.prometheus.middleware import PrometheusMiddleware
from nats.js import JetStreamContext

from rag_common.config.settings import ServiceSettings
from rag_common.transport.labels import RagTelemetryMiddleware, metrics_provider
from rag_common.transport.recovery import JetStreamLayout, attach_layout
from rag_common.transport.streams import ensure_streams
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects


def make_broker(settings: ServiceSettings, telemetry: ServiceTelemetry) -> NatsBroker:
    """A broker that traces and counts every message and keeps its JetStream layout in place.

    Trace context travels in headers; streams and consumers are put back when NATS comes back
    without them (``rag_common.transport.recovery``).

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
        settings.nats_servers,
        publish_timeout_s=settings.publish_timeout_s,
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


class RagBroker(NatsBroker):
    """FastStream's NATS broker, whose JetStream publishes wait ``publish_timeout_s`` for their PubAck."""

    def __init__(self, *args: Any, publish_timeout_s: float = 5.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.publish_timeout_s = publish_timeout_s

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
        """FastStream's publish, but a JetStream publish waits ``publish_timeout_s`` for its PubAck.

        ``RAG_PUBLISH_TIMEOUT_S``, unless told otherwise: FastStream's 0.5 s failed uploads and
        questions with 503 on a loaded machine although the server stored them moments later.
        """
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


def nats_security(settings: ServiceSettings) -> NatsSecurity | None:
    """User and password (``NATS_USER``/``NATS_PASSWORD``) and TLS (``tls://`` or a CA file), if set."""
    context = None
    if settings.nats_tls_ca_file or any(s.startswith("tls://") for s in settings.nats_servers):
        ca = str(settings.nats_tls_ca_file) if settings.nats_tls_ca_file else None
        context = ssl.create_default_context(cafile=ca)
        if settings.nats_tls_cert_file and settings.nats_tls_key_file:
            context.load_cert_chain(str(settings.nats_tls_cert_file), str(settings.nats_tls_key_file))
    if settings.nats_user and settings.nats_password:
        return NatsUserPassword(settings.nats_user, settings.nats_password.get_secret_value(), ssl_context=context)
    return NatsSecurity(ssl_context=context) if context else None
