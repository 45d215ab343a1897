"""Liveness, readiness and metrics."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rag_common.transport.service import nats_connected
from rag_common.wire import subjects
from rag_common.wire.http_api import Liveness, Readiness
from rag_gateway.deps import Gateway, GatewayDep, ResourcesIfOpen
from rag_gateway.resources import Resources

router = APIRouter(tags=["health"])

STREAMS = (subjects.INGEST_STREAM, subjects.QUERY_STREAM, subjects.DLQ_STREAM)


@router.get("/healthz", response_model=Liveness)
async def healthz() -> Liveness:
    """Liveness: answered by the event loop itself, so a hung loop fails the probe."""
    return Liveness()


@router.get("/livez", response_model=Liveness)
async def livez() -> Liveness:
    """Same as ``/healthz`` (the name the services' health ports use)."""
    return Liveness()


async def _ping(gateway: Gateway, service: str) -> dict[str, Any] | None:
    try:
        reply = await gateway.broker.connection.request(
            subjects.ping_subject(service), b"", timeout=gateway.settings.ready_timeout_s
        )
        data: dict[str, Any] = json.loads(reply.data)
        return data
    except Exception:
        return None


async def _streams(gateway: Gateway) -> str:
    js = gateway.broker.connection.jetstream()
    missing = []
    for stream in STREAMS:
        try:
            await asyncio.wait_for(js.stream_info(stream), gateway.settings.ready_timeout_s)
        except Exception:
            missing.append(stream)
    return "ok" if not missing else "missing " + ", ".join(missing)


def _service_state(reply: dict[str, Any] | None) -> str:
    """A service is ready when it answers and its own consumers exist."""
    if not reply:
        return "no reply"
    if reply.get("status", "ok") != "ok":
        return "missing " + ", ".join(str(m) for m in reply.get("missing", [])) if reply.get("missing") else "degraded"
    return "ok"


async def services_state(gateway: Gateway) -> dict[str, str]:
    """Ping every service (in parallel) and record who answered in ``rag_service_up``."""
    replies = await asyncio.gather(*(_ping(gateway, s) for s in subjects.SERVICES))
    services: dict[str, str] = {}
    for service, reply in zip(subjects.SERVICES, replies, strict=True):
        services[service] = _service_state(reply)
        if service in ("ingest", "retriever"):
            store = (reply or {}).get("vector_store")
            if store == "ok" or "vector_store" not in services:
                services["vector_store"] = "ok" if store == "ok" else "unknown"
    for name, state in services.items():
        gateway.metrics.service_up.labels(name).set(1 if state == "ok" else 0)
    return services


async def readiness(gateway: Gateway, resources: Resources | None) -> Readiness:
    """This gateway's own checks (they decide readiness) and the services behind it (reported).

    Also sets ``rag_gateway_ready`` and ``rag_service_up``; the gateway's monitor calls this every
    ``stats_interval_s`` so the gauges stay current between probes.
    """
    checks: dict[str, str] = {}
    checks["nats"] = "ok" if nats_connected(gateway.broker) else "disconnected"
    checks["buckets"] = "ok" if resources is not None else "not open"
    services: dict[str, str] = {}
    if checks["nats"] == "ok":
        checks["streams"], services = await asyncio.gather(_streams(gateway), services_state(gateway))
    else:
        checks["streams"] = "unknown"
        services = {name: "unknown" for name in (*subjects.SERVICES, "vector_store")}
        for name in services:
            gateway.metrics.service_up.labels(name).set(0)
    missing = sorted(name for name, state in checks.items() if state != "ok")
    degraded = sorted(name for name, state in services.items() if state != "ok")
    status = "not_ready" if missing else "degraded" if degraded else "ready"
    gateway.metrics.ready.set(0 if missing else 1)
    return Readiness(status=status, checks=checks, services=services, missing=missing, degraded=degraded)


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "not ready: `missing` names the failed checks"}},
)
async def readyz(gateway: GatewayDep, resources: ResourcesIfOpen, response: Response) -> Readiness:
    """Ready when this gateway can serve: connected to NATS, streams and buckets in place.

    The services behind it are reported, not required: a dead evaluator makes answers fail
    until it is back, but it must not take every gateway replica out of its Service (clients
    would then get connection errors instead of a clear 503 per request). Missing services show
    as ``"status": "degraded"`` with their names under ``degraded``.
    """
    body = await readiness(gateway, resources)
    response.status_code = 503 if body.missing else 200
    return body


@router.get("/metrics", response_class=PlainTextResponse, responses={200: {"description": "Prometheus text format"}})
async def metrics(gateway: GatewayDep) -> Response:
    return Response(generate_latest(gateway.telemetry.registry), media_type=CONTENT_TYPE_LATEST)
