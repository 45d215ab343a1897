"""Every gateway route returns its response model, so FastAPI checks each body against it.

A route that returns a dict is validated only at run time, and one that returns a ``Response``
under a ``response_model`` is not checked at all: the OpenAPI document would promise a shape
nothing enforces. Here each route's return annotation must be its response model (mypy, strict,
then holds the body to it); a route without one must build its own response (204, Prometheus
text, a file) or stream events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest
from fastapi import APIRouter
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.responses import Response, StreamingResponse

from rag_common.wire.http_api import DocumentAccepted
from rag_gateway.app import create_app
from rag_gateway.settings import GatewaySettings
from tests.support.routes import api_routes

pytestmark = pytest.mark.unit


def returned(route: APIRoute) -> tuple[Any, ...]:
    """The types a route's endpoint is annotated to return, a union taken apart."""
    hint = get_type_hints(route.endpoint)["return"]
    return get_args(hint) if isinstance(hint, UnionType) or get_origin(hint) is Union else (hint,)


def is_response(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, Response)


def unchecked_body(route: APIRoute) -> str | None:
    """Why FastAPI would not hold this route's body to its response model; None when it does."""
    kinds = returned(route)
    model = route.response_model
    if model is None:
        if all(is_response(kind) or get_origin(kind) is AsyncIterator for kind in kinds):
            return None
        return f"returns {kinds} without a response model"
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return f"answers an untyped {model}"
    if model not in kinds:
        return f"returns {kinds}, not its response model {model.__name__}"
    # A streaming alternative (e.g. ``stream: true``) is a body of events, not the model's JSON.
    others = [kind for kind in kinds if kind is not model]
    if not all(isinstance(kind, type) and issubclass(kind, StreamingResponse) for kind in others):
        return f"may return {others} besides {model.__name__}"
    return None


def methods(route: APIRoute) -> list[str]:
    return sorted(route.methods or ())


ROUTES = api_routes()


@pytest.mark.parametrize("route", ROUTES, ids=[f"{' '.join(methods(r))} {r.path}" for r in ROUTES])
def test_a_route_returns_its_response_model(route: APIRoute) -> None:
    assert unchecked_body(route) is None, unchecked_body(route)


def test_every_route_the_gateway_serves_is_checked() -> None:
    app = create_app(GatewaySettings(nats_url="nats://127.0.0.1:1"))
    served = {(method, path) for path, operations in app.openapi()["paths"].items() for method in operations}
    walked = {(method.lower(), route.path) for route in ROUTES for method in methods(route)}
    assert served <= walked, f"routes outside rag_gateway.api routers: {sorted(served - walked)}"


def test_a_route_returning_a_dict_or_a_response_is_caught() -> None:
    router = APIRouter()

    @router.post("/dict", response_model=DocumentAccepted)
    async def as_dict() -> dict[str, str]:
        return {"document_id": "d", "status": "queued", "request_id": "r"}

    @router.post("/encoded", response_model=DocumentAccepted)
    async def encoded() -> Response:
        return Response(b"{}", media_type="application/json")

    @router.post("/inferred")
    async def inferred() -> dict[str, str]:
        return {}

    @router.post("/model", response_model=DocumentAccepted)
    async def model() -> DocumentAccepted:
        return DocumentAccepted(document_id="d", status="queued", request_id="r")

    found = {route.path: unchecked_body(route) for route in router.routes if isinstance(route, APIRoute)}
    assert found["/dict"] is not None
    assert found["/encoded"] is not None
    assert found["/inferred"] is not None
    assert found["/model"] is None
