"""The error shape of the API: ``{"error": {"code", "message", "request_id"}}``.

The OpenAI-compatible paths (``/v1/chat/...``, ``/v1/models``) answer in OpenAI's own shape,
``{"error": {"message", "type", "param", "code"}}`` (plus ``request_id``), so OpenAI clients parse them.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from nats.errors import Error as NatsError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_gateway.headers import API_HEADERS

log = logging.getLogger("rag.gateway")

REQUEST_ID_HEADER = "X-Request-ID"
CLIENT_REQUEST_ID_HEADER = "X-Client-Request-ID"
# What a client's own request id may look like to be echoed as a label (anything else is dropped).
_CLIENT_LABEL = re.compile(r"[A-Za-z0-9._:-]{1,64}")

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


# OpenAI's error ``type`` per status; an invalid request is 400 there, not 422.
OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}
OPENAI_PATH_PREFIXES = ("/v1/chat/", "/v1/models")


def openai_style(request: Request) -> bool:
    """Whether this request came to an OpenAI-compatible path, whose errors use OpenAI's shape."""
    return request.url.path.startswith(OPENAI_PATH_PREFIXES)


class ApiError(Exception):
    """An error the client should see as-is."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        param: str | None = None,
        principal: object = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers
        self.param = param  # the request field at fault (shown in the OpenAI error shape)
        self.principal = principal  # who was refused, when known (for the audit log; never shown)


OnError = Callable[[Request, ApiError], Awaitable[None]]


def request_id(request: Request) -> str:
    """The server's id of this request: it keys answer routing and message de-duplication."""
    rid = str(getattr(request.state, "request_id", ""))
    if not rid:
        rid = request.state.request_id = uuid.uuid4().hex
    return rid


def client_request_id(request: Request) -> str | None:
    """The client's own ``X-Request-ID``, when it is a sane label: for logs and echoes only."""
    label = getattr(request.state, "client_request_id", None)
    return label if isinstance(label, str) else None


def client_label(request: Request) -> dict[str, str]:
    """``{"client_request_id": ...}`` when the client sent one, for response bodies."""
    label = client_request_id(request)
    return {"client_request_id": label} if label else {}


def error_response(request: Request, status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    rid = request_id(request)
    label = client_label(request)
    if openai_style(request):
        status = 400 if status == 422 else status
        kind = OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        param = extra.pop("param", None)
        detail = {"message": message, "type": kind, "param": param, "code": code, "request_id": rid, **label, **extra}
        return JSONResponse({"error": detail}, status_code=status, headers={REQUEST_ID_HEADER: rid, **API_HEADERS})
    extra.pop("param", None)
    body = {"error": {"code": code, "message": message, "request_id": rid, **label, **extra}}
    # the security headers too: a 500 is sent from outside every middleware
    return JSONResponse(body, status_code=status, headers={REQUEST_ID_HEADER: rid, **API_HEADERS})


class RequestIdMiddleware:
    """Every request gets a fresh server-side id, sent back in ``X-Request-ID``.

    A client's own ``X-Request-ID`` never becomes that id: two callers could pick the same one
    and cross their answers, or make JetStream drop an upload as a duplicate. It is kept as a
    label (``client_request_id`` in logs and bodies, ``X-Client-Request-ID`` in the response).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = uuid.uuid4().hex
        given = MutableHeaders(scope=scope).get(REQUEST_ID_HEADER, "")
        label = given if _CLIENT_LABEL.fullmatch(given) else None
        state = scope.setdefault("state", {})
        state["request_id"], state["client_request_id"] = rid, label

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers[REQUEST_ID_HEADER] = rid
                if label:
                    headers[CLIENT_REQUEST_ID_HEADER] = label
            await send(message)

        await self.app(scope, receive, send_with_id)


class BodyTooLarge(Exception):
    """Raised from ``receive`` once a body passes its limit, to stop the route reading it."""


def too_large_message(limit: int) -> str:
    return f"the request body is larger than this endpoint's limit of {limit} bytes"


class BodyLimitMiddleware:
    """A 413 for a body over its endpoint's limit, before any of it is parsed.

    A ``Content-Length`` over the limit is answered at once, without reading the body; a body
    without one (chunked) is counted as it arrives and cut off at the limit, and whatever the
    route made of its half-read body is replaced by the 413. Uploads have their own, larger
    limit (``limits`` by path); every other endpoint takes at most ``default_limit`` bytes.
    (Starlette's own body limit answers in plain text, not in this API's error shape.)
    ``messages`` by path: what the 413 says instead (an upload's names the file's limit, the one
    its user chose a file against, not the file's plus the form's).
    """

    def __init__(
        self, app: ASGIApp, default_limit: int, limits: dict[str, int], messages: dict[str, str] | None = None
    ) -> None:
        self.app, self.default_limit, self.limits, self.messages = app, default_limit, limits, messages or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"].rstrip("/")
        limit = self.limits.get(path, self.default_limit)
        message = self.messages.get(path) or too_large_message(limit)
        too_large = error_response(Request(scope), 413, "too_large", message)
        too_large.headers["Connection"] = "close"  # an unread body leaves the connection unusable
        declared = MutableHeaders(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await too_large(scope, receive, send)
            return
        received, exceeded, started = 0, False, False

        async def counted() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise BodyTooLarge(message)
            return message

        async def replying(message: Message) -> None:
            nonlocal started
            if exceeded:
                if not started:
                    started = True
                    await too_large(scope, receive, send)
                return  # drop the route's own answer to its half-read body
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, replying)
        except Exception:
            if not exceeded:
                raise
            if not started:
                started = True
                await too_large(scope, receive, send)


def _plain(message: str) -> str:
    """A validation message without pydantic's "Value error, " prefix."""
    return message.removeprefix("Value error, ")


def _problem(error: Any) -> tuple[str, str | None]:
    """One validation error as "field: message", and the field (None for the body as a whole).

    A body that is not JSON is located by FastAPI at the character where parsing stopped, which
    is no field: "body: not valid JSON at character 10 (Expecting ...)", not "10: JSON decode error".
    """
    if error["type"] == "json_invalid":
        where, reason = error["loc"][-1], (error.get("ctx") or {}).get("error", "")
        return f"body: not valid JSON at character {where}" + (f" ({reason})" if reason else ""), None
    field = ".".join(str(p) for p in error["loc"][1:]) or None
    return f"{field or 'body'}: {_plain(error['msg'])}", field


def install_error_handlers(app: FastAPI, on_forbidden: OnError | None = None) -> None:
    """The API's error shape for every error; ``on_forbidden`` sees each 403 first (the audit log)."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        if exc.status == 403 and on_forbidden is not None:
            await on_forbidden(request, exc)
        response = error_response(request, exc.status, exc.code, exc.message, param=exc.param)
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = STATUS_CODES.get(exc.status_code, "error")
        return error_response(request, exc.status_code, code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(e) for e in exc.errors()]
        message = "; ".join(text for text, _ in problems) or "invalid request"
        param = problems[0][1] if problems else None
        return error_response(request, 422, "invalid_request", message, param=param)

    @app.exception_handler(NatsError)
    async def bus_unavailable(request: Request, exc: NatsError) -> JSONResponse:
        # NATS did not confirm in time (a publish ack, a bucket write): a retry can succeed.
        rid = request_id(request)
        log.warning("request %s: NATS did not answer: %s: %s", rid, type(exc).__name__, exc)
        response = error_response(
            request, 503, "unavailable", f"the message bus did not answer in time; try again ({rid})"
        )
        response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # The details (which may name files, hosts or library internals) go to the log only.
        rid = request_id(request)
        log.error("request %s failed: %s: %s", rid, type(exc).__name__, exc, exc_info=exc)
        return error_response(request, 500, "internal_error", f"internal error; the gateway log has it as {rid}")
