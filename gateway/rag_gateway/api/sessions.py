"""Conversation memory as the client sees it: read or forget a session's turns.

Only the owner of a session (``Principal.owner``: the key, or its tenant) finds it; for anyone
else, and for a key of the tenant that cannot read the session's collection, it is the same 404
as a session that never existed.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from rag_common.wire.http_api import SessionView
from rag_gateway.access import Authenticated, authenticate, refused_as_not_found
from rag_gateway.auth import Principal, Right
from rag_gateway.deps import ResourcesDep
from rag_gateway.errors import ApiError
from rag_gateway.openapi import errors
from rag_gateway.resources import Resources
from rag_gateway.sessions import Session, scoped_id, valid_session_id

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], dependencies=[Depends(authenticate)])


def _checked(session_id: str) -> None:
    if not valid_session_id(session_id):
        raise ApiError(422, "invalid_request", "session_id must be 1-128 letters, digits, '-' or '_'")


def not_found(session_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no session {session_id!r} (never used, forgotten after its TTL, or not yours)")


async def owned(resources: Resources, request: Request, principal: Principal, session_id: str) -> Session:
    """The caller's own session, readable by it: else 404, whether it is missing or someone else's."""
    _checked(session_id)
    session = await resources.sessions.get(scoped_id(principal.owner, session_id))
    if session is None:
        raise not_found(session_id)
    if not principal.can(session.collection, Right.READ):
        await refused_as_not_found(resources.audit, request, principal, session_id, session.collection)
        raise not_found(session_id)
    return session


@router.get("/{session_id}", response_model=SessionView, responses=errors(404, 422, 503))
async def get_session(
    session_id: str, request: Request, resources: ResourcesDep, principal: Authenticated
) -> SessionView:
    """The turns remembered for one of the caller's conversations, oldest first (read right on its collection)."""
    session = await owned(resources, request, principal, session_id)
    return SessionView(
        session_id=session_id, collection=session.collection, turns=session.turns, updated_at=session.updated_at
    )


@router.delete("/{session_id}", status_code=204, responses=errors(404, 422, 503))
async def delete_session(
    session_id: str, request: Request, resources: ResourcesDep, principal: Authenticated
) -> Response:
    """Forget one of the caller's conversations now (read right on its collection: whoever may converse may forget)."""
    await owned(resources, request, principal, session_id)
    if not await resources.sessions.delete(scoped_id(principal.owner, session_id)):
        raise not_found(session_id)
    return Response(status_code=204)
