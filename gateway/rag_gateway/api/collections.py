"""The collections a caller may read, with their document counts and the caller's rights; and each
collection's profile (assistant name, canned texts, support contact, terminology)."""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter, Request, Response

from rag_common.config.texts import CollectionTexts
from rag_common.wire.http_api import CollectionInfo, CollectionList
from rag_common.wire.messages import AuditEvent
from rag_gateway.access import AdminPrincipal, Authenticated, require
from rag_gateway.api.documents import check_collection, retire_cached_answers
from rag_gateway.audit import AuditLog, where, who
from rag_gateway.auth import Principal, Right
from rag_gateway.deps import ResourcesDep
from rag_gateway.errors import ApiError
from rag_gateway.openapi import errors

router = APIRouter(prefix="/v1/collections", tags=["collections"])


@router.get("", response_model=CollectionList)
async def list_collections(resources: ResourcesDep, principal: Authenticated) -> CollectionList:
    counts = Counter(await resources.status.collection_counts())
    names = principal.visible_collections(counts)
    return CollectionList(
        collections=[
            CollectionInfo(name=name, documents=counts.get(name, 0), rights=sorted(principal.rights(name)))
            for name in names
        ]
    )


@router.get("/{name}/profile", response_model=CollectionTexts, responses=errors(422, 503))
async def get_profile(name: str, resources: ResourcesDep, principal: Authenticated) -> CollectionTexts:
    """The collection's effective profile (read right): the collections file, overridden by what
    ``PUT`` set, every field filled (defaults for what neither sets)."""
    check_collection(name)
    require(principal, name, Right.READ)
    return await resources.profiles.get(name)


@router.put("/{name}/profile", response_model=CollectionTexts, responses=errors(422, 503))
async def put_profile(
    name: str, profile: CollectionTexts, request: Request, resources: ResourcesDep, admin: AdminPrincipal
) -> CollectionTexts:
    """Set the collection's profile (admin). The fields given override the collections file's from
    the next question on; fields left out keep the file's value or the default. Returns the
    effective profile."""
    check_collection(name)
    effective = await resources.profiles.put(name, profile)
    await retire_cached_answers(resources.status, name)  # the evaluator's terminology check may judge answers otherwise
    fields = ",".join(sorted(profile.model_fields_set))
    await _audit(resources.audit, request, admin, "profile_set", name, {"fields": fields})
    return effective


async def _audit(
    audit: AuditLog, request: Request, admin: Principal, action: str, name: str, details: dict[str, str]
) -> None:
    event = AuditEvent.model_validate(
        {"action": action, "collection": name, "details": details, **who(admin), **where(request)}
    )
    await audit.record(event)


@router.delete("/{name}/profile", status_code=204, responses=errors(404, 422, 503))
async def delete_profile(name: str, request: Request, resources: ResourcesDep, admin: AdminPrincipal) -> Response:
    """Drop what ``PUT`` set (admin): the collections file's profile, or the defaults, hold again."""
    check_collection(name)
    if not await resources.profiles.delete(name):
        raise ApiError(404, "not_found", f"collection {name!r} has no profile set through the API")
    await retire_cached_answers(resources.status, name)
    await _audit(resources.audit, request, admin, "profile_deleted", name, {})
    return Response(status_code=204)
