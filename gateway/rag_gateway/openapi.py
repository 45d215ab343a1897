"""The OpenAPI document as the API really behaves: typed answers, and errors in the shapes returned.

Checked in as ``docs/openapi.json`` by ``python -m rag_gateway.openapi_file`` (a test fails when it is
stale). This module sits below the routes, which import ``errors`` from it, so it is handed the app
rather than building one.

FastAPI documents a 422 ``HTTPValidationError`` for every route with input, but the gateway turns
validation errors into ``ErrorBody`` (422), or into OpenAI's shape with 400 on the OpenAI paths.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from rag_common.wire.http_api import ErrorBody, OpenAIErrorBody
from rag_gateway.errors import OPENAI_PATH_PREFIXES

DESCRIPTIONS = {
    400: "invalid request (OpenAI paths)",
    401: "no or unknown API key",
    403: "the key may not do this",
    404: "no such document, collection, session or model",
    409: "the session belongs to another collection",
    413: "body larger than the limit (RAG_GATEWAY_MAX_BODY_BYTES; uploads RAG_GATEWAY_MAX_UPLOAD_BYTES)",
    415: "unsupported file type",
    422: "invalid input",
    429: "rate limited; see Retry-After",
    503: "not ready (NATS, storage or a service unavailable)",
    504: "no answer in time",
}
FASTAPI_VALIDATION = ("HTTPValidationError", "ValidationError")


def errors(*statuses: int, openai: bool = False) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: each status with the error body it really has."""
    model = OpenAIErrorBody if openai else ErrorBody
    return {status: {"model": model, "description": DESCRIPTIONS[status]} for status in statuses}


def _ref(name: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}


def _uses(schema: dict[str, Any], name: str) -> bool:
    return f'"#/components/schemas/{name}"' in str(schema).replace("'", '"')


def fix_validation_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """Errors as sent: FastAPI's default 422 replaced, auth's 401/403/429 added, unused schemas dropped."""
    for path, operations in schema.get("paths", {}).items():
        openai = path.startswith(OPENAI_PATH_PREFIXES)
        for operation in operations.values():
            responses = operation.get("responses", {})
            for status, response in responses.items():
                content = response.get("content", {})
                if status[0] in "45" and content and "application/json" not in content:
                    # errors are JSON even on a streaming route (they are sent before any event)
                    response["content"] = {"application/json": next(iter(content.values()))}
            ref = _ref("OpenAIErrorBody" if openai else "ErrorBody")
            if path.startswith("/v1/"):  # every API route is behind authentication and the rate limit
                for status in (401, 429) if openai else (401, 403, 429):
                    responses.setdefault(str(status), {"description": DESCRIPTIONS[status], **ref})
            if "requestBody" in operation:  # the body limit answers before any route reads it
                responses.setdefault("413", {"description": DESCRIPTIONS[413], **ref})
            default = responses.get("422")
            if default is None or "HTTPValidationError" not in str(default):
                continue
            del responses["422"]
            only_path = "requestBody" not in operation and all(
                p.get("in") == "path" and p.get("schema", {}).get("type") == "string"
                for p in operation.get("parameters", [])
            )
            if only_path:
                continue  # a string path parameter cannot fail validation: no 422 is ever sent
            if openai:
                responses.setdefault("400", {"description": DESCRIPTIONS[400], **_ref("OpenAIErrorBody")})
            else:
                responses["422"] = {"description": DESCRIPTIONS[422], **_ref("ErrorBody")}
    components = schema.get("components", {}).get("schemas", {})
    for name in FASTAPI_VALIDATION:
        components.pop(name, None)
    for name in FASTAPI_VALIDATION:  # nothing may still point at them
        assert not _uses(schema, name), f"{name} is still referenced"
    return schema


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
                tags=app.openapi_tags,
            )
            app.openapi_schema = fix_validation_errors(schema)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def render(app: FastAPI) -> str:
    """``app``'s OpenAPI document as checked in: indented, keys sorted, one final newline."""
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"
