"""Conversation memory as the client sees it: read or forget a session's turns."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from rag_common.sessions import valid_session_id
from rag_gateway.deps import Gateway, GatewayDep
from rag_gateway.errors import ApiError

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


def _checked(gateway: Gateway, session_id: str) -> Any:
    if not valid_session_id(session_id):
        raise ApiError(422, "invalid_request", "session_id must be 1-128 letters, digits, '-' or '_'")
    if gateway.sessions is None:
        raise ApiError(503, "unavailable", "conversation memory is not ready")
    return gateway.sessions


@router.get("/{session_id}")
async def get_session(session_id: str, gateway: GatewayDep) -> dict[str, Any]:
    """The turns remembered for a conversation, oldest first."""
    session = await _checked(gateway, session_id).get(session_id)
    if session is None:
        raise ApiError(404, "not_found", f"no session {session_id!r} (never used, or forgotten after its TTL)")
    return {
        "session_id": session_id,
        "collection": session.collection,
        "turns": [t.model_dump() for t in session.turns],
        "updated_at": session.updated_at,
    }


@router.delete("/{session_id}", status_code=204)
async def delete_session(session_id: str, gateway: GatewayDep) -> Response:
    """Forget a conversation now."""
    if not await _checked(gateway, session_id).delete(session_id):
        raise ApiError(404, "not_found", f"no session {session_id!r}")
    return Response(status_code=204)
