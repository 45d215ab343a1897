"""The collections a caller may read, with their document counts and the caller's rights; and each
collection's profile (assistant name, canned texts, support contact, terminology)."""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter, Request, Response

from rag_common.config.texts import CollectionTexts
from rag_common.store.profiles import ProfileBook
from rag_common.wire.http_api import CollectionInfo, CollectionList
from rag_common.wire.messages import AuditEvent
from rag_gateway.access import AdminPrincipal, Authenticated, require
from rag_gateway.api.documents import check_collection
from rag_gateway.audit import where, who
from rag_gateway.auth import Principal, Right
from rag_gateway.deps import Gateway, GatewayDep
from rag_gateway.errors import ApiError
from rag_gateway.openapi import errors

router = APIRouter(prefix="/v1/collections", tags=["collections"])


@router.get("", response_model=CollectionList)
async def list_collections(gateway: GatewayDep, principal: Authenticated) -> CollectionList:
    counts = Counter(await gateway.status.collection_counts()) if gateway.status else Counter()
    names = principal.visible_collections(counts)
    return CollectionList(
        collections=[
            CollectionInfo(name=name, documents=counts.get(name, 0), rights=sorted(principal.rights(name)))
            for name in names
        ]
    )


def _profiles(gateway: Gateway) -> ProfileBook:
    if gateway.profiles is None or gateway.profiles.kv is None:
        raise ApiError(503, "unavailable", "the profile store is not ready yet")
    return gateway.profiles


@router.get("/{name}/profile", response_model=CollectionTexts, responses=errors(422, 503))
async def get_profile(name: str, gateway: GatewayDep, principal: Authenticated) -> CollectionTexts:
    """The collection's effective profile (read right): the collections file, overridden by what
    ``PUT`` set, every field filled (defaults for what neither sets)."""
    check_collection(name)
    require(principal, name, Right.READ)
    return await _profiles(gateway).get(name)


@router.put("/{name}/profile", response_model=CollectionTexts, responses=errors(422, 503))
async def put_profile(
    name: str, profile: CollectionTexts, request: Request, gateway: GatewayDep, admin: AdminPrincipal
) -> CollectionTexts:
    """Set the collection's profile (admin). The fields given override the collections file's from
    the next question on; fields left out keep the file's value or the default. Returns the
    effective profile."""
    check_collection(name)
    effective = await _profiles(gateway).put(name, profile)
    await _audit(gateway, request, admin, "profile_set", name, {"fields": ",".join(sorted(profile.model_fields_set))})
    return effective


async def _audit(
    gateway: Gateway, request: Request, admin: Principal, action: str, name: str, details: dict[str, str]
) -> None:
    if gateway.audit is not None:
        event = AuditEvent.model_validate(
            {"action": action, "collection": name, "details": details, **who(admin), **where(request)}
        )
        await gateway.audit.record(event)


@router.delete("/{name}/profile", status_code=204, responses=errors(404, 422, 503))
async def delete_profile(name: str, request: Request, gateway: GatewayDep, admin: AdminPrincipal) -> Response:
    """Drop what ``PUT`` set (admin): the collections file's profile, or the defaults, hold again."""
    check_collection(name)
    if not await _profiles(gateway).delete(name):
        raise ApiError(404, "not_found", f"collection {name!r} has no profile set through the API")
    await _audit(gateway, request, admin, "profile_deleted", name, {})
    return Response(status_code=204)
