"""The one error shape of the API: ``{"error": {"code", "message", "request_id"}}``."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.responses import Response

REQUEST_ID_HEADER = "X-Request-ID"

STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
    504: "timeout",
}


class ApiError(Exception):
    """An error the client should see as-is."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "")) or uuid.uuid4().hex


def error_response(request: Request, status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    rid = request_id(request)
    body = {"error": {"code": code, "message": message, "request_id": rid, **extra}}
    return JSONResponse(body, status_code=status, headers={REQUEST_ID_HEADER: rid})


class RequestIdMiddleware(BaseHTTPMiddleware):
    """Every request gets an id (the client's ``X-Request-ID`` if sane), echoed in the response."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        given = request.headers.get(REQUEST_ID_HEADER, "")
        request.state.request_id = given if given.isalnum() and len(given) <= 64 else uuid.uuid4().hex
        response = await call_next(request)
        response.headers[REQUEST_ID_HEADER] = request.state.request_id
        return response


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        response = error_response(request, exc.status, exc.code, exc.message)
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(request, exc.status_code, STATUS_CODES.get(exc.status_code, "error"), str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()]
        return error_response(request, 422, "invalid_request", "; ".join(problems) or "invalid request")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return error_response(request, 500, "internal_error", f"{type(exc).__name__}: {exc}")
