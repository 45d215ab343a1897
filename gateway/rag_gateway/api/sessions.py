"""Conversation memory as the client sees it: read or forget a session's turns."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from rag_common.http_api import SessionView
from rag_common.sessions import SessionStore, valid_session_id
from rag_gateway.access import Authenticated, authenticate, require
from rag_gateway.auth import Right
from rag_gateway.deps import Gateway, GatewayDep
from rag_gateway.errors import ApiError
from rag_gateway.openapi import errors

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], dependencies=[Depends(authenticate)])


def _checked(gateway: Gateway, session_id: str) -> SessionStore:
    if not valid_session_id(session_id):
        raise ApiError(422, "invalid_request", "session_id must be 1-128 letters, digits, '-' or '_'")
    if gateway.sessions is None:
        raise ApiError(503, "unavailable", "conversation memory is not ready")
    return gateway.sessions


@router.get("/{session_id}", response_model=SessionView, responses=errors(404, 422, 503))
async def get_session(session_id: str, gateway: GatewayDep, principal: Authenticated) -> SessionView:
    """The turns remembered for a conversation, oldest first (read right on its collection)."""
    session = await _checked(gateway, session_id).get(session_id)
    if session is None:
        raise ApiError(404, "not_found", f"no session {session_id!r} (never used, or forgotten after its TTL)")
    require(principal, session.collection, Right.READ)
    return SessionView(
        session_id=session_id, collection=session.collection, turns=session.turns, updated_at=session.updated_at
    )


@router.delete("/{session_id}", status_code=204, responses=errors(404, 422, 503))
async def delete_session(session_id: str, gateway: GatewayDep, principal: Authenticated) -> Response:
    """Forget a conversation now (read right on its collection: whoever may converse may forget)."""
    store = _checked(gateway, session_id)
    session = await store.get(session_id)
    if session is None:
        raise ApiError(404, "not_found", f"no session {session_id!r}")
    require(principal, session.collection, Right.READ)
    if not await store.delete(session_id):
        raise ApiError(404, "not_found", f"no session {session_id!r}")
    return Response(status_code=204)
