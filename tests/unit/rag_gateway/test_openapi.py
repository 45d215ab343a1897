"""The OpenAPI document types the answer and documents the errors as the gateway really sends them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

import rag_gateway.openapi_file as openapi_file
from rag_common.wire.http_api import ErrorBody, OpenAIErrorBody
from rag_gateway.app import create_app
from rag_gateway.resources import Resources
from rag_gateway.settings import GatewaySettings

pytestmark = pytest.mark.unit

CHECKED_IN = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"
# what a successful response may be besides a JSON model: Prometheus text, SSE, or no body
UNTYPED_OK = {
    ("get", "/metrics"),
    ("post", "/v1/query/stream"),
    ("delete", "/v1/keys/{key_id}"),
    ("get", "/v1/assessments/{assessment_id}/events"),
}


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(GatewaySettings(nats_url="nats://127.0.0.1:1"))


@pytest.fixture(scope="module")
def client(app: FastAPI) -> TestClient:
    # No lifespan: nothing connects, so storage-backed routes answer 503 (a documented error too).
    return TestClient(app, raise_server_exceptions=False)


def served_after_start(app: ASGIApp, state: dict[str, Any]) -> ASGIApp:
    """``app`` as a server serves it once its lifespan has yielded ``state``: the server copies the
    lifespan state into every request's scope (the ASGI lifespan-state contract)."""

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "state": dict(state)}
        await app(scope, receive, send)

    return served


@pytest.fixture(scope="module")
def started(app: FastAPI) -> TestClient:
    """The app with its stores open, as far as a request refused for its input can tell: the input
    is checked before any store is read, so the stand-in is never touched."""
    stores = cast(Resources, SimpleNamespace())
    return TestClient(served_after_start(app, {"resources": stores}), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def schema(client: TestClient) -> dict[str, Any]:
    document: dict[str, Any] = client.get("/openapi.json").json()
    return document


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def response_schema(schema: dict[str, Any], path: str, method: str, status: int) -> dict[str, Any]:
    response = schema["paths"][path][method]["responses"][str(status)]
    return resolve(schema, response["content"]["application/json"]["schema"])


def test_the_answer_is_typed(schema: dict[str, Any]) -> None:
    answer = response_schema(schema, "/v1/query", "post", 200)
    assert {"answer", "citations", "passages", "route", "flags", "flagged", "usage", "timings_ms"} <= set(
        answer["properties"]
    )
    citation = resolve(schema, answer["properties"]["citations"]["items"])
    assert {"n", "source", "section", "page", "text"} <= set(citation["properties"])
    completion = response_schema(schema, "/v1/chat/completions", "post", 200)
    assert resolve(schema, completion["properties"]["rag"])["title"] == "Answer"
    assert response_schema(schema, "/v1/documents", "post", 202)["title"] == "DocumentAccepted"
    assert "documents" in response_schema(schema, "/v1/documents", "get", 200)["properties"]


def test_every_error_is_documented_in_the_shape_really_sent(schema: dict[str, Any]) -> None:
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                shape = resolve(schema, response["content"]["application/json"]["schema"])["title"]
                expected = "OpenAIErrorBody" if path.startswith(("/v1/chat/", "/v1/models")) else "ErrorBody"
                if path == "/readyz":
                    expected = "Readiness"  # not ready: the same body, which says what is missing
                assert shape == expected, f"{method.upper()} {path} {status}: {shape}"
    assert "422" not in schema["paths"]["/v1/chat/completions"]["post"]["responses"]
    assert "400" in schema["paths"]["/v1/chat/completions"]["post"]["responses"]


def test_no_422_where_no_input_can_fail_validation(schema: dict[str, Any]) -> None:
    """A route whose only input is a string path parameter never sends a validation error."""
    assert "422" not in schema["paths"]["/v1/keys/{key_id}"]["delete"]["responses"]
    assert "422" in schema["paths"]["/v1/sessions/{session_id}"]["get"]["responses"]  # its own check


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "stores_open"),
    [
        ("post", "/v1/query", {"json": {"question": "  "}}, 422, True),
        ("post", "/v1/query", {"json": {"question": "hi", "collection": "Bad Name"}}, 422, True),
        ("post", "/v1/query/stream", {"json": {"question": ""}}, 422, True),
        ("get", "/v1/documents/abc", {}, 404, True),
        ("get", "/v1/documents/0123456789abcdef0123456789abcdef", {}, 503, False),
        ("get", "/v1/documents", {}, 503, False),
        ("get", "/v1/sessions/not%20valid", {}, 422, True),
        ("post", "/v1/chat/completions", {"json": {"model": "default"}}, 400, True),
        ("post", "/v1/chat/completions", {"json": {"model": "default", "messages": [{"role": "x"}]}}, 400, True),
        ("get", "/v1/models", {}, 503, False),
        ("post", "/v1/query", {"content": b'{"question": "' + b"x" * 1_100_000 + b'"}'}, 413, False),
        ("post", "/v1/keys", {"json": {"name": "k", "collections": {"docs": ["read"]}}}, 503, False),
    ],
)
def test_errors_returned_are_the_ones_documented(
    client: TestClient,
    started: TestClient,
    schema: dict[str, Any],
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
    stores_open: bool,
) -> None:
    response = (started if stores_open else client).request(method.upper(), path, **kwargs)
    assert response.status_code == status, response.text
    template = next(p for p in schema["paths"] if p.split("{")[0] == path.rsplit("/", 1)[0] + "/" or p == path)
    documented = schema["paths"][template][method]["responses"]
    assert str(status) in documented, f"{method.upper()} {template} returns {status}, not documented"
    shape = resolve(schema, documented[str(status)]["content"]["application/json"]["schema"])["title"]
    model = OpenAIErrorBody if shape == "OpenAIErrorBody" else ErrorBody
    body = model.model_validate(response.json())
    assert body.error.message


def test_the_checked_in_document_is_current() -> None:
    expected = openapi_file.document()
    assert CHECKED_IN.read_text() == expected, "run: python -m rag_gateway.openapi_file --out docs/openapi.json"
    assert openapi_file.main(["--check", str(CHECKED_IN)]) == 0


def test_check_fails_on_a_stale_document(tmp_path: Path) -> None:
    stale = tmp_path / "openapi.json"
    stale.write_text(CHECKED_IN.read_text().replace('"/v1/query"', '"/v1/ask"'))
    assert openapi_file.main(["--check", str(stale)]) == 1


def test_every_route_answers_a_typed_body(schema: dict[str, Any]) -> None:
    """Each success is a named model (not an untyped object), except text, SSE and 204s."""
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            (status,) = [s for s in operation["responses"] if s.startswith("2")]
            content = operation["responses"][status].get("content", {})
            if status == "204" or (method, path) in UNTYPED_OK:
                assert "application/json" not in content, f"{method.upper()} {path}"
                continue
            node = content["application/json"]["schema"]
            assert "$ref" in node, f"{method.upper()} {path} {status} answers an untyped {node}"
            assert resolve(schema, node).get("properties"), f"{method.upper()} {path}"


def test_every_route_with_a_body_declares_the_413(schema: dict[str, Any]) -> None:
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if "requestBody" in operation:
                assert "413" in operation["responses"], f"{method.upper()} {path}"
