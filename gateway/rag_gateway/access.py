"""Authentication, rate limits and scope checks as FastAPI dependencies.

A router gets all three with one line::

    router = APIRouter(prefix="/v1/things", dependencies=[Depends(authenticate)])

and an endpoint that needs to know who calls (to check a collection) declares
``principal: Authenticated`` (FastAPI runs ``authenticate`` once per request even when both are
used) and calls ``require(principal, collection, Right.READ)``. Checking the scope in a
dependency (see ``readable_query``) matters for streaming endpoints: a check inside the stream
would run after the 200 has been sent.

Keys come as ``Authorization: Bearer <key>`` (what OpenAI-compatible clients send) or
``X-API-Key: <key>``. With ``RAG_GATEWAY_AUTH=off`` (the local default) every caller is an
unlimited admin.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from typing import Annotated, Protocol

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_gateway.audit import AuditLog
from rag_gateway.auth import ADMIN, LOCAL, KeyRecord, Principal, Right, hash_key, key_id_of, key_matches
from rag_gateway.deps import Gateway, GatewayDep, ResourcesIfOpen, opened
from rag_gateway.errors import ApiError, error_response

_bearer = HTTPBearer(auto_error=False, description="an API key as a bearer token")
_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="an API key")
REALM = 'Bearer realm="rag"'
log = logging.getLogger("rag.gateway")


class KeyLookup(Protocol):
    """Where keys are found (``KeyStore``; an in-memory one in tests)."""

    async def get(self, key_id: str) -> KeyRecord | None: ...


class Admission(Protocol):
    """What admitting a caller reads of the gateway's open stores (``Resources``)."""

    @property
    def keys(self) -> KeyLookup: ...

    @property
    def audit(self) -> AuditLog: ...


def _unauthorized(message: str, error: str | None = None) -> ApiError:
    challenge = f'{REALM}, error="{error}"' if error else REALM
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": challenge})


async def identify(gateway: Gateway, keys: KeyLookup, presented: str) -> Principal | None:
    """The principal a presented key stands for, or None for a key we do not know."""
    settings = gateway.settings
    if settings.admin_key is not None and hmac.compare_digest(
        hash_key(presented), hash_key(settings.admin_key.get_secret_value())
    ):
        return ADMIN
    key_id = key_id_of(presented)
    if key_id is None:
        return None
    record = await keys.get(key_id)
    if record is None or not key_matches(presented, record.key_hash):
        return None
    return Principal.for_key(record, settings.rate_limit_per_min)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries: ``Authorization: Bearer <key>``, else ``X-API-Key``."""
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return headers.get("x-api-key", "").strip() or None


async def admit(
    gateway: Gateway, resources: Admission | None, presented: str | None, request: Request | None = None
) -> Principal:
    """The caller behind a key, its rate-limit token spent: or 401, 429 (503 before start-up, when
    ``resources`` is None). A 401 or 429 is recorded in the audit log (with ``request``'s id and path)."""
    try:
        return await _admit(gateway, resources, presented)
    except ApiError as exc:
        if exc.status in (401, 429) and resources is not None:
            principal = exc.principal if isinstance(exc.principal, Principal) else None
            await resources.audit.refused(request, principal, exc.status, exc.message)
        raise


async def _admit(gateway: Gateway, resources: Admission | None, presented: str | None) -> Principal:
    if not presented:
        raise _unauthorized("an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'")
    if resources is None:
        raise ApiError(503, "unavailable", "the key store is not ready yet")
    try:
        principal = await identify(gateway, resources.keys, presented)
    except Exception as exc:  # NATS unreachable: say so, never a 500 with internals
        log.warning("could not look up an API key: %s: %s", type(exc).__name__, exc)
        raise ApiError(503, "unavailable", "the key store cannot be reached; retry shortly") from None
    if principal is None:
        raise _unauthorized("the API key is not valid (unknown, revoked or mistyped)", "invalid_token")
    if principal.key_id is not None and principal.rate_limit_per_min is not None:
        wait_s = gateway.limiter.take(principal.key_id, principal.rate_limit_per_min)
        if wait_s:
            raise ApiError(
                429,
                "rate_limited",
                f"rate limit of {principal.rate_limit_per_min} requests per minute reached; retry in {wait_s}s",
                headers={"Retry-After": str(wait_s)},
                principal=principal,
            )
    return principal


async def authenticate(
    request: Request,
    gateway: GatewayDep,
    resources: ResourcesIfOpen,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    api_key: Annotated[str | None, Depends(_api_key_header)],
) -> Principal:
    """Who is calling: 401 without a valid key, 429 over the key's rate limit.

    ``bearer`` and ``api_key`` are declared so that OpenAPI documents both ways to send a key.
    """
    if gateway.settings.auth == "off":
        return LOCAL
    admitted = getattr(request.state, "principal", None)  # by AuthenticateBeforeBody
    if isinstance(admitted, Principal):
        return admitted
    principal = await admit(gateway, resources, presented_key(request.headers), request)
    request.state.principal = principal
    return principal


class AuthenticateBeforeBody:
    """Admit requests that carry a body before anything reads it.

    FastAPI reads and parses a request's body before it runs dependencies, so without this an
    unauthenticated client could make the gateway spool a whole upload before its 401. The
    principal found here is the one ``authenticate`` returns, so the rate limit is spent once.
    """

    BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

    def __init__(self, app: ASGIApp, gateway: Gateway) -> None:
        self.app, self.gateway = app, gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self.gateway.settings.auth == "on"
            and scope["method"] in self.BODY_METHODS
            and scope["path"].startswith("/v1/")
        ):
            request = Request(scope)
            try:
                presented = presented_key(request.headers)
                request.state.principal = await admit(self.gateway, opened(request), presented, request)
            except ApiError as exc:
                response = error_response(request, exc.status, exc.code, exc.message)
                response.headers.update(exc.headers or {})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


Authenticated = Annotated[Principal, Depends(authenticate)]


def require(principal: Principal, collection: str, right: Right) -> None:
    """403 unless the caller has ``right`` on ``collection``."""
    if not principal.can(collection, right):
        raise ApiError(403, "forbidden", f"this API key has no {right.value} right on collection {collection!r}")


async def require_admin(principal: Authenticated) -> Principal:
    if not principal.admin:
        raise ApiError(403, "forbidden", "only the admin key may do this")
    return principal


AdminPrincipal = Annotated[Principal, Depends(require_admin)]


async def record_forbidden(request: Request, exc: ApiError) -> None:
    """The audit log's line for a 403 (the error handler calls this for every one)."""
    resources = opened(request)
    if resources is not None:
        principal = getattr(request.state, "principal", None)
        await resources.audit.refused(
            request, principal if isinstance(principal, Principal) else None, 403, exc.message
        )


async def refused_as_not_found(
    audit: AuditLog, request: Request, principal: Principal, target: str, collection: str
) -> None:
    """Record a request answered 404 because the thing is not the caller's: the caller cannot
    tell it from a missing one, the audit log can."""
    reason = f"no read right on collection {collection!r}: answered as not found"
    await audit.refused(request, principal, 404, reason, collection=collection, target=target)
