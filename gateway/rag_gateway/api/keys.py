"""Managing API keys (admin only): create (the key is shown once), list without secrets, revoke."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from rag_common.wire.http_api import KeyCreated, KeyInfo, KeyList
from rag_common.wire.messages import AuditEvent
from rag_gateway.access import AdminPrincipal, require_admin
from rag_gateway.audit import where, who
from rag_gateway.auth import KEY_ID_HEX, KeyCreate
from rag_gateway.deps import ResourcesDep
from rag_gateway.errors import ApiError
from rag_gateway.openapi import errors

router = APIRouter(prefix="/v1/keys", tags=["keys"], dependencies=[Depends(require_admin)])


@router.post("", status_code=201, response_model=KeyCreated, responses=errors(422, 503))
async def create_key(spec: KeyCreate, request: Request, resources: ResourcesDep, admin: AdminPrincipal) -> KeyCreated:
    """Create a key scoped to collections; the response is the only time the key is shown."""
    record, key = await resources.keys.create(spec)
    details = {"name": record.name, **{f"scope:{c}": ",".join(r) for c, r in record.collections.items()}}
    if record.tenant:
        details["tenant"] = record.tenant
    event = AuditEvent(action="key_created", target=record.id, details=details, **who(admin), **where(request))
    await resources.audit.record(event)
    return KeyCreated.model_validate({**record.public(), "key": key})


@router.get("", response_model=KeyList, responses=errors(503))
async def list_keys(resources: ResourcesDep) -> KeyList:
    return KeyList(keys=[KeyInfo.model_validate(r.public()) for r in await resources.keys.list()])


@router.delete("/{key_id}", status_code=204, responses=errors(404, 503))
async def delete_key(key_id: str, request: Request, resources: ResourcesDep, admin: AdminPrincipal) -> Response:
    """Revoke a key: every gateway replica refuses it from the next request on."""
    valid = len(key_id) == KEY_ID_HEX and all(c in "0123456789abcdef" for c in key_id)
    store = resources.keys
    record = await store.get(key_id) if valid else None
    if record is None or not await store.delete(key_id):
        raise ApiError(404, "not_found", f"no key {key_id!r}")
    event = AuditEvent(
        action="key_revoked", target=key_id, details={"name": record.name}, **who(admin), **where(request)
    )
    await resources.audit.record(event)
    return Response(status_code=204)
