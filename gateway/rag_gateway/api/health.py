"""Liveness, readiness and metrics."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rag_common import subjects
from rag_gateway.deps import Gateway, GatewayDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


async def _ping(gateway: Gateway, service: str) -> dict[str, Any] | None:
    try:
        reply = await gateway.broker.connection.request(
            subjects.ping_subject(service), b"", timeout=gateway.settings.ready_timeout_s
        )
        data: dict[str, Any] = json.loads(reply.data)
        return data
    except Exception:
        return None


@router.get("/readyz")
async def readyz(gateway: GatewayDep) -> JSONResponse:
    """200 when NATS, the vector store and every service answer; else 503 naming what is missing."""
    checks: dict[str, str] = {}
    connection = gateway.broker.config.connection_state.connection if gateway.broker else None
    nats_ok = bool(connection and connection.is_connected)
    checks["nats"] = "ok" if nats_ok else "unreachable"
    if nats_ok:
        replies = await asyncio.gather(*(_ping(gateway, s) for s in subjects.SERVICES))
        for service, reply in zip(subjects.SERVICES, replies, strict=True):
            checks[service] = "ok" if reply else "no reply"
            if service in ("ingest", "retriever"):
                store = (reply or {}).get("vector_store")
                if store == "ok" or "vector_store" not in checks:
                    checks["vector_store"] = "ok" if store == "ok" else "unknown"
    else:
        checks.update(dict.fromkeys(subjects.SERVICES, "unknown"))
        checks["vector_store"] = "unknown"
    missing = sorted(name for name, state in checks.items() if state != "ok")
    body = {"status": "ready" if not missing else "not_ready", "checks": checks, "missing": missing}
    return JSONResponse(body, status_code=200 if not missing else 503)


@router.get("/metrics")
async def metrics(gateway: GatewayDep) -> Response:
    return Response(generate_latest(gateway.telemetry.registry), media_type=CONTENT_TYPE_LATEST)
