"""The gateway's error shape for failures no route handles: ids always, internals never."""

from __future__ import annotations

import httpx
import nats.errors
import pytest
from fastapi import FastAPI

from rag_gateway.errors import BodyLimitMiddleware, RequestIdMiddleware, install_error_handlers

pytestmark = pytest.mark.unit


def make_app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("password=hunter2 at /srv/secret/path")

    @app.get("/bus")
    async def bus() -> None:
        raise nats.errors.TimeoutError  # a JetStream publish whose ack did not come in time

    @app.post("/echo")
    async def echo(body: dict[str, str]) -> dict[str, str]:
        return body

    app.add_middleware(BodyLimitMiddleware, default_limit=1024, limits={"/big": 4096})
    app.add_middleware(RequestIdMiddleware)
    return app


async def test_an_unexpected_error_is_a_500_without_its_internals() -> None:
    transport = httpx.ASGITransport(app=make_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        response = await client.get("/boom", headers={"X-Request-ID": "mine-1"})
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["code"] == "internal_error"
    assert error["client_request_id"] == "mine-1"
    assert error["request_id"] == response.headers["x-request-id"]
    assert error["request_id"] in error["message"]
    assert "hunter2" not in response.text
    assert "RuntimeError" not in response.text


async def test_a_message_bus_timeout_is_a_503_to_retry_not_an_internal_error() -> None:
    transport = httpx.ASGITransport(app=make_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        response = await client.get("/bus")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    error = response.json()["error"]
    assert error["code"] == "unavailable"
    assert "try again" in error["message"]
    assert error["request_id"] == response.headers["x-request-id"]


async def test_body_limits_apply_per_path_and_keep_the_error_shape() -> None:
    transport = httpx.ASGITransport(app=make_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        small = await client.post("/echo", json={"a": "b"})
        large = await client.post("/echo", json={"a": "b" * 2000})
    assert small.status_code == 200
    assert small.json() == {"a": "b"}
    assert large.status_code == 413
    assert large.json()["error"]["code"] == "too_large"
    assert "1024 bytes" in large.json()["error"]["message"]
