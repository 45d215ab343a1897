"""The gateway: HTTP in, NATS out; answers come back on this replica's own subject."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypedDict

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from faststream.nats import NatsBroker, NatsMessage
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_common.config.texts import check_collections_file
from rag_common.store.assessments import AssessmentMetrics
from rag_common.transport.broker import make_broker
from rag_common.transport.recovery import layout_of
from rag_common.transport.streams import prepare_jetstream
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.wire import subjects
from rag_gateway.access import AuthenticateBeforeBody, record_forbidden
from rag_gateway.answers import AnswerHub
from rag_gateway.api import (
    assessment_edits,
    assessments,
    audit,
    collections,
    documents,
    health,
    keys,
    openai,
    query,
    sessions,
)
from rag_gateway.api.web import install_web
from rag_gateway.deps import Gateway, GatewayMetrics
from rag_gateway.errors import BodyLimitMiddleware, RequestIdMiddleware, install_error_handlers
from rag_gateway.headers import DOCS_ASSETS, install_browser_protection
from rag_gateway.jsstats import JetStreamStats
from rag_gateway.openapi import install_openapi
from rag_gateway.resources import Resources, open_resources
from rag_gateway.settings import GatewaySettings

log = logging.getLogger("rag.gateway")


def build_broker(settings: GatewaySettings, telemetry: ServiceTelemetry, hub: AnswerHub) -> NatsBroker:
    """The gateway's broker, subscribed once to this replica's answers (``rag.answer.<gateway>.*.*``)."""
    broker = make_broker(settings, telemetry)

    @broker.subscriber(subjects.answer_wildcard(settings.gateway_id))
    async def on_answer(msg: NatsMessage) -> None:
        """This replica's answers: ``delta`` (AnswerDelta), ``final`` (QueryAnswered), ``error`` (AnswerError)."""
        hub.deliver(msg.raw_message.subject, msg.body)

    return broker


class ObserveRequests:
    """``rag_http_request_duration_seconds`` by route and status: request in → response headers out.

    A plain ASGI middleware: Starlette's ``BaseHTTPMiddleware`` (``@app.middleware("http")``) runs
    the rest of the app in a task group of its own and passes the response through memory
    streams, a measurable share of a question's time in the gateway.
    """

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def observed(message: Message) -> None:
            if message["type"] == "http.response.start":
                path = getattr(scope.get("route"), "path", "unmatched")
                self.metrics.requests.labels(path, str(message["status"])).observe(time.perf_counter() - started)
            await send(message)

        await self.app(scope, receive, observed)


def log_auth_state(settings: GatewaySettings) -> None:
    if settings.auth == "off":
        log.warning(
            "authentication is OFF (local default): every caller on %s may do everything; "
            "set RAG_GATEWAY_AUTH=on and RAG_GATEWAY_ADMIN_KEY to require API keys",
            settings.host,
        )
    else:
        log.info(
            "authentication is ON: API keys required (admin key from RAG_GATEWAY_ADMIN_KEY, "
            "other keys in bucket %s); default rate limit %d/min per key and per gateway replica; CORS origins: %s",
            subjects.API_KEYS_BUCKET,
            settings.rate_limit_per_min,
            ", ".join(settings.cors_origins) or "none",
        )


async def monitor(gateway: Gateway, resources: Resources, stats: JetStreamStats) -> None:
    """Every ``stats_interval_s``: readiness, which services answer and JetStream backlog, into /metrics.

    Keeps ``rag_gateway_ready``, ``rag_service_up`` and the ``rag_consumer_*`` gauges current even
    when nothing probes ``/readyz`` (compose, or a Prometheus scraping between probes).
    """
    interval = gateway.settings.stats_interval_s
    js = gateway.broker.connection.jetstream()
    while True:
        try:
            await health.readiness(gateway, resources)
            await asyncio.wait_for(stats.poll(js), max(interval, 1.0))
            stats.up.set(1)
        except Exception as exc:
            stats.up.set(0)
            log.warning("monitoring poll failed: %r", exc)
        await asyncio.sleep(interval)


class LifespanState(TypedDict):
    """What the lifespan hands every request (``request.state``): the stores it opened."""

    resources: Resources


def create_app(settings: GatewaySettings, telemetry: ServiceTelemetry | None = None) -> FastAPI:
    telemetry = telemetry or setup_telemetry("gateway", settings=settings)
    hub = AnswerHub()
    broker = build_broker(settings, telemetry, hub)
    gateway = Gateway(
        settings=settings,
        broker=broker,
        hub=hub,
        telemetry=telemetry,
        metrics=GatewayMetrics(telemetry),
        assessment_metrics=AssessmentMetrics(telemetry.registry),
    )
    stats = JetStreamStats(telemetry.registry)

    layout = layout_of(broker)
    if layout is not None:  # questions lost with RAG_QUERY (NATS restart) are queued again

        async def resubmit() -> None:
            await query.resubmit_unanswered(gateway)

        layout.add_restore_hook(resubmit)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[LifespanState]:
        check_collections_file(settings.collections_file)  # profiles are served from it
        await prepare_jetstream(broker, settings)
        resources = await open_resources(broker, settings, gateway.metrics.cache_invalidations)
        log_auth_state(settings)
        await broker.start()
        watcher = asyncio.create_task(monitor(gateway, resources, stats))
        try:
            yield {"resources": resources}
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await broker.stop()

    # /docs and /redoc load Swagger UI and ReDoc from the gateway itself (fastapi-offline ships the
    # files), not from a CDN: they work on a machine without internet
    app = FastAPIOffline(
        static_url=DOCS_ASSETS,
        title="RAG gateway",
        version="0.1.0",
        description="Question answering over your documents, with citations, routing and quality flags.",
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    install_error_handlers(app, on_forbidden=record_forbidden)
    app.include_router(health.router)
    app.include_router(documents.router)
    app.include_router(query.router)
    app.include_router(sessions.router)
    app.include_router(collections.router)
    app.include_router(assessments.router)
    app.include_router(assessment_edits.router)
    app.include_router(keys.router)
    app.include_router(audit.router)
    app.include_router(openai.router)
    install_web(app)
    install_openapi(app)

    app.add_middleware(ObserveRequests, metrics=gateway.metrics)
    upload_limit = settings.max_upload_bytes + documents.MULTIPART_OVERHEAD
    app.add_middleware(
        BodyLimitMiddleware,
        default_limit=settings.max_body_bytes,
        limits={"/v1/documents": upload_limit},
        messages={"/v1/documents": documents.file_too_large_message(settings.max_upload_bytes)},
    )
    app.add_middleware(AuthenticateBeforeBody, gateway=gateway)  # a caller without a key gets 401, not 413
    app.add_middleware(RequestIdMiddleware)  # outside both: every response, 401s and 413s too, carries the id
    install_browser_protection(app, settings.cors_origins)
    # No "http send"/"http receive" spans: one per SSE chunk would be one span per streamed token.
    FastAPIInstrumentor.instrument_app(
        app,
        tracer_provider=telemetry.tracer_provider,
        excluded_urls="healthz,livez,readyz,metrics",
        exclude_spans=["send", "receive"],
    )
    return app
