"""Reading the audit log (admin only): who created or revoked keys, uploaded or deleted documents,
set profiles, and which requests were refused; oldest first, paged by stream sequence."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from rag_common.wire.http_api import AuditPage, AuditRecord
from rag_common.wire.messages import AuditAction
from rag_gateway.access import require_admin
from rag_gateway.deps import ResourcesDep
from rag_gateway.openapi import errors

router = APIRouter(prefix="/v1/audit", tags=["audit"], dependencies=[Depends(require_admin)])

MAX_LIMIT = 1000
# A stream sequence is an unsigned 64-bit number, and a page starts at ``after + 1``.
MAX_AFTER = 2**64 - 2
# The last second of year 9999: the latest time a start time can name (Python's and NATS's dates end there).
MAX_SINCE = 253_402_300_799


@router.get("", response_model=AuditPage, responses=errors(422, 503))
async def read_audit(
    resources: ResourcesDep,
    action: Annotated[AuditAction | None, Query(description="only events of this action")] = None,
    actor: Annotated[
        str | None,
        Query(
            pattern=r"^[A-Za-z0-9-]{1,64}$", description="only events of this key id, 'admin', 'local' or 'anonymous'"
        ),
    ] = None,
    after: Annotated[
        int | None, Query(ge=0, le=MAX_AFTER, description="events after this sequence (a page's `next`)")
    ] = None,
    since: Annotated[
        float | None, Query(ge=0, le=MAX_SINCE, description="events at or after this Unix time (at most year 9999)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
) -> AuditPage:
    """Up to ``limit`` events, oldest first; pass ``next`` as ``after`` for the following page."""
    events, last = await resources.audit.read(action=action, actor=actor, after=after, since=since, limit=limit)
    return AuditPage(
        events=[AuditRecord.model_validate({**event.model_dump(), "seq": seq}) for seq, event in events], next=last
    )
