"""The gateway: HTTP in, NATS out; answers come back on this replica's own subject."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from faststream.nats import NatsBroker, NatsMessage
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from starlette.middleware.base import RequestResponseEndpoint
from starlette.responses import Response

from rag_common import subjects
from rag_common.broker import make_broker
from rag_common.sessions import SessionStore
from rag_common.stage import open_buckets, open_sessions_bucket, prepare_jetstream
from rag_common.status import StatusStore
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_gateway.answers import AnswerHub
from rag_gateway.api import documents, health, query, sessions
from rag_gateway.deps import Gateway, GatewayMetrics
from rag_gateway.errors import RequestIdMiddleware, install_error_handlers
from rag_gateway.settings import GatewaySettings


def build_broker(settings: GatewaySettings, telemetry: ServiceTelemetry, hub: AnswerHub) -> NatsBroker:
    broker = make_broker(settings, telemetry)

    @broker.subscriber(subjects.answer_wildcard(settings.gateway_id))
    async def on_answer(msg: NatsMessage) -> None:
        hub.deliver(msg.raw_message.subject, msg.body)

    return broker


def create_app(settings: GatewaySettings, telemetry: ServiceTelemetry | None = None) -> FastAPI:
    telemetry = telemetry or setup_telemetry("gateway")
    hub = AnswerHub()
    broker = build_broker(settings, telemetry, hub)
    gateway = Gateway(settings=settings, broker=broker, hub=hub, telemetry=telemetry, metrics=GatewayMetrics(telemetry))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await prepare_jetstream(broker, settings)
        objects, kv = await open_buckets(broker, settings)
        gateway.objects, gateway.status = objects, StatusStore(kv)
        sessions_kv = await open_sessions_bucket(broker, settings, ttl_s=settings.session_ttl_s)
        gateway.sessions = SessionStore(sessions_kv, max_turns=settings.session_max_turns)
        await broker.start()
        try:
            yield
        finally:
            await broker.stop()

    app = FastAPI(
        title="RAG gateway",
        version="0.1.0",
        description="Question answering over your documents, with citations, routing and quality flags.",
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(documents.router)
    app.include_router(query.router)
    app.include_router(sessions.router)

    @app.middleware("http")
    async def observe(request: Request, call_next: RequestResponseEndpoint) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        gateway.metrics.requests.labels(path, str(response.status_code)).observe(time.perf_counter() - started)
        return response

    app.add_middleware(RequestIdMiddleware)
    FastAPIInstrumentor.instrument_app(
        app, tracer_provider=telemetry.tracer_provider, excluded_urls="healthz,readyz,metrics"
    )
    return app
