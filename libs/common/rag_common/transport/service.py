"""The shell every service shares: readiness pings, health and metrics, start-up and shutdown.

``create_service`` turns a service's broker (with its handlers registered) into the FastStream app
that ``python -m <package>`` and the dev runner start: load what the handlers need, declare the
JetStream layout, open what needs a connection, serve ``/metrics``, ``/livez`` and ``/readyz``;
on shutdown, stop serving them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common.config.settings import ServiceSettings
from rag_common.transport.recovery import layout_of
from rag_common.transport.streams import prepare_jetstream
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects

StartStep = Callable[[], Awaitable[None]]


def create_service(
    broker: NatsBroker,
    settings: ServiceSettings,
    telemetry: ServiceTelemetry,
    *,
    load: StartStep | None = None,
    connected: StartStep | None = None,
) -> FastStream:
    """The app of one service, started in the one order every service needs.

    ``load`` runs first (models, stores, checks of settings files), then the JetStream layout is
    declared, then ``connected`` runs (buckets), then health is served.
    """
    app = FastStream(broker)

    @app.on_startup
    async def startup() -> None:
        if load is not None:
            await load()
        await prepare_jetstream(broker, settings)
        if connected is not None:
            await connected()
        serve_health(broker, telemetry, settings.metrics_host, settings.metrics_port, settings.liveness_timeout_s)

    @app.after_shutdown
    async def stop_health() -> None:
        telemetry.stop_serving()

    return app


def register_ping(
    broker: NatsBroker, service: str, check: Callable[[], Awaitable[dict[str, Any]]] | None = None
) -> None:
    """Answer ``rag.control.ping.<service>`` so the gateway's /readyz can see this service."""

    @broker.subscriber(subjects.ping_subject(service))
    async def ping() -> dict[str, Any]:
        """Readiness: ``ok`` with the service's own checks, or ``degraded`` naming what NATS lost."""
        details = await check() if check else {}
        layout = layout_of(broker)
        missing = await layout.missing() if layout else []
        if missing:  # connected, but its streams or consumers are gone (e.g. NATS restarted)
            return {"service": service, "status": "degraded", "missing": missing, **details}
        return {"service": service, "status": "ok", **details}


def nats_connected(broker: NatsBroker) -> bool:
    """Whether the broker holds an open connection (readiness); False before it connects."""
    connection = broker.config.connection_state.connection if broker else None
    return bool(connection and connection.is_connected)


def serve_health(
    broker: NatsBroker,
    telemetry: ServiceTelemetry,
    host: str,
    port: int,
    liveness_timeout_s: float,
) -> int:
    """``/metrics``, ``/livez`` (the event loop answers) and ``/readyz`` (connected to NATS)."""

    async def ready() -> dict[str, str]:
        return {"nats": "ok" if nats_connected(broker) else "disconnected"}

    return telemetry.serve_metrics(host, port, ready=ready, liveness_timeout_s=liveness_timeout_s)
