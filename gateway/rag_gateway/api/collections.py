"""The collections a caller may read, with their document counts and the caller's rights."""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter

from rag_common.http_api import CollectionInfo, CollectionList
from rag_gateway.access import Authenticated
from rag_gateway.deps import GatewayDep

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
