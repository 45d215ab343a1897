"""The gateway's shared state and the typed FastAPI dependencies that read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, get_args

from fastapi import Depends, Request
from faststream.nats import NatsBroker
from prometheus_client import Counter, Gauge, Histogram

from rag_common.store.answer_cache import invalidation_counter
from rag_common.store.assessments import AssessmentMetrics
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects
from rag_common.wire.messages.query import Tier
from rag_gateway.answers import AnswerHub
from rag_gateway.errors import ApiError
from rag_gateway.ratelimit import RateLimiter
from rag_gateway.resources import Resources
from rag_gateway.settings import GatewaySettings

UPLOAD_OUTCOMES = ("accepted", "unchanged", "rejected", "failed")
QUERY_OUTCOMES = ("answered", "refused")
QUERY_ROUTES = ("/v1/query", "/v1/query/stream", "/v1/chat/completions")
# The stages that report themselves in an answer's timings_ms (plus "total", added here).
QUERY_STAGES = ("router", "retriever", "generator", "llm", "evaluator", "total")


class GatewayMetrics:
    def __init__(self, telemetry: ServiceTelemetry) -> None:
        registry = telemetry.registry
        self.requests = Histogram(
            "rag_http_request_duration_seconds",
            "HTTP request latency",
            ["route", "status"],
            registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        for route in QUERY_ROUTES:
            self.requests.labels(route, "200")
        self.queries = Counter(
            "rag_queries_total", "Queries answered, by outcome and tier", ["outcome", "tier"], registry=registry
        )
        for outcome in QUERY_OUTCOMES:  # every series starts at 0, so the first query shows in increase()
            for tier in get_args(Tier):
                self.queries.labels(outcome, tier)
        self.flags = Counter(
            "rag_gateway_answer_flags_total", "Answers returned with each flag raised", ["flag"], registry=registry
        )
        self.uploads = Counter(
            "rag_uploads_total",
            "Document uploads by outcome (accepted, unchanged, rejected, failed)",
            ["outcome"],
            registry=registry,
        )
        for outcome in UPLOAD_OUTCOMES:
            self.uploads.labels(outcome)
        self.ready = Gauge("rag_gateway_ready", "1 when the last /readyz found this gateway ready", registry=registry)
        self.service_up = Gauge(
            "rag_service_up",
            "1 when the service answered the last /readyz ping (vector_store: as ingest/retriever saw it)",
            ["service"],
            registry=registry,
        )
        for service in (*subjects.SERVICES, "vector_store"):
            self.service_up.labels(service).set(0)
        self.stage_ms = Histogram(
            "rag_query_stage_duration_seconds",
            "Per-stage latency as reported in timings_ms",
            ["stage"],
            registry=registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        for stage in QUERY_STAGES:
            self.stage_ms.labels(stage)
        self.cache_invalidations = invalidation_counter(registry)


@dataclass
class Gateway:
    """What the gateway holds from ``create_app`` on, before it connects: the middlewares and the
    answer subscription need it then. What needs NATS is in ``Resources``, made in the lifespan."""

    settings: GatewaySettings
    broker: NatsBroker
    hub: AnswerHub
    telemetry: ServiceTelemetry
    metrics: GatewayMetrics
    assessment_metrics: AssessmentMetrics
    limiter: RateLimiter = field(default_factory=RateLimiter)


async def get_gateway(request: Request) -> Gateway:
    """The gateway's state. A coroutine on purpose: FastAPI runs a plain ``def`` dependency in its
    thread pool, and this one is asked for several times per request (a thread hop each)."""
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]


def opened(request: Request) -> Resources | None:
    """The stores the lifespan opened (its state, which the server copies into every request);
    None in an app served without its lifespan."""
    resources: Resources | None = getattr(request.state, "resources", None)
    return resources


async def get_resources(request: Request) -> Resources:
    """The gateway's open stores, or 503: a served gateway always has them (the server runs the
    lifespan before the first request), an app served without its lifespan never does."""
    resources = opened(request)
    if resources is None:
        raise ApiError(503, "unavailable", "storage is not open yet: the gateway has not started")
    return resources


async def get_resources_if_open(request: Request) -> Resources | None:
    """For what answers without storage too: readiness (which reports it) and authentication
    with ``RAG_GATEWAY_AUTH=off``."""
    return opened(request)


ResourcesDep = Annotated[Resources, Depends(get_resources)]
ResourcesIfOpen = Annotated[Resources | None, Depends(get_resources_if_open)]
