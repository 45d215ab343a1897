"""The gateway in this process on a real nats-server, with its lifespan run, called over ASGI.

No service runs behind it: a stand-in pipeline answers every question the gateway queues with a
fixed answer, so a route that accepts its input answers instead of waiting for its timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import nats
from fastapi import FastAPI
from nats.aio.msg import Msg
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_common.wire import subjects
from rag_common.wire.messages import QueryRequested
from rag_gateway.app import create_app
from rag_gateway.settings import GatewaySettings
from tests.support.messages import answered

ADMIN_KEY = "test-admin-key-0123456789abcdefghijklmnop"


def served_after_start(app: ASGIApp, state: dict[str, Any]) -> ASGIApp:
    """``app`` as a server serves it once its lifespan has yielded ``state`` (the server copies
    the lifespan state into every request's scope: the ASGI lifespan-state contract)."""

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "state": dict(state)}
        await app(scope, receive, send)

    return served


def gateway_settings(nats_url: str, **overrides: Any) -> GatewaySettings:
    """Auth on with the admin key; quick readiness pings and assessment streams (no service answers)."""
    fields: dict[str, Any] = {
        "nats_url": nats_url,
        "auth": "on",
        "admin_key": ADMIN_KEY,
        "gateway_id": "gwinproc",
        "ready_timeout_s": 0.05,
        "assessment_timeout_s": 1.0,
        "query_timeout_s": 10.0,
        **overrides,
    }
    return GatewaySettings(**fields)


@asynccontextmanager
async def answering_pipeline(nats_url: str) -> AsyncIterator[None]:
    """Answers each queued question on its gateway's answer subject, as the evaluator would."""
    connection = await nats.connect(nats_url)

    async def answer(msg: Msg) -> None:
        query = QueryRequested.model_validate_json(msg.data).query
        final = answered("A fixed answer.", query.request_id)
        final.query = query
        subject = subjects.answer_subject(query.gateway_id, query.request_id, "final")
        await connection.publish(subject, final.model_dump_json().encode())

    await connection.subscribe(subjects.QUERY_REQUESTED, cb=answer)
    try:
        yield
    finally:
        await connection.close()


@asynccontextmanager
async def gateway_app(
    settings: GatewaySettings,
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient, httpx.ASGITransport]]:
    """The started app, an HTTP client to it that sends the admin key (another key: pass ``headers``),
    and the transport to it (for another client)."""
    app = create_app(settings)
    async with app.router.lifespan_context(app) as state:
        transport = asgi_transport(app, state)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://gateway", timeout=30, headers=bearer(ADMIN_KEY)
        ) as client:
            yield app, client, transport


def asgi_transport(app: FastAPI, state: Any) -> httpx.ASGITransport:
    """A transport to the started ``app`` (its lifespan yielded ``state``), for any HTTP client."""
    return httpx.ASGITransport(app=served_after_start(app, dict(state or {})), raise_app_exceptions=False)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
