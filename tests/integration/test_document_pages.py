"""``GET /v1/documents`` pages with a cursor: each document once, in order, only what the key may read.

The gateway runs in this process on a real nats-server; uploads stay queued (no ingest runs),
which is all a listing needs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from rag_client.client import AsyncRagClient
from rag_devrun.natsserver import LocalNatsServer
from tests.support.http import upload
from tests.support.inprocess import ADMIN_KEY, bearer, gateway_app, gateway_settings

pytestmark = pytest.mark.integration

LOADED = {"alpha": 7, "beta": 3}


@pytest.fixture
async def started(nats_server: LocalNatsServer) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.ASGITransport]]:
    async with gateway_app(gateway_settings(nats_server.url)) as (_, client, transport):
        for collection, count in LOADED.items():
            for n in range(count):
                made = await upload(client, f"doc-{n}.md", f"# Doc {n}\n\nText {n}.\n".encode(), collection)
                assert made.status_code == 202, made.text
        yield client, transport


async def pages(client: httpx.AsyncClient, query: str, headers: dict[str, str] | None = None) -> list[list[str]]:
    """Every page's (collection/source) entries, following ``next`` until it is null."""
    found: list[list[str]] = []
    after = ""
    while True:
        response = await client.get(f"/v1/documents?{query}{after}", headers=headers)
        assert response.status_code == 200, response.text
        body = response.json()
        found.append([f"{d['collection']}/{d['source']}" for d in body["documents"]])
        if body["next"] is None:
            return found
        after = f"&after={body['next']}"
        assert len(found) < 20, "the cursor does not move"


async def test_pages_list_each_document_once_in_order(
    started: tuple[httpx.AsyncClient, httpx.ASGITransport],
) -> None:
    client, _ = started
    every = await pages(client, "limit=3")
    assert [len(page) for page in every] == [3, 3, 3, 1]
    listed = [entry for page in every for entry in page]
    assert len(set(listed)) == sum(LOADED.values())
    assert [entry.split("/")[0] for entry in listed] == ["alpha"] * 7 + ["beta"] * 3
    whole = (await client.get("/v1/documents")).json()
    assert whole["next"] is None
    assert sorted(f"{d['collection']}/{d['source']}" for d in whole["documents"]) == sorted(listed)
    alpha = await pages(client, "collection=alpha&limit=5")
    assert [len(page) for page in alpha] == [5, 2]


async def test_a_key_pages_through_its_collections_only(started: tuple[httpx.AsyncClient, httpx.ASGITransport]) -> None:
    client, _ = started
    made = await client.post("/v1/keys", json={"name": "b", "collections": {"beta": ["read"]}})
    key = bearer(made.json()["key"])
    every = await pages(client, "limit=2", headers=key)
    assert [len(page) for page in every] == [2, 1]
    assert all(entry.startswith("beta/") for page in every for entry in page)


async def test_a_bad_cursor_or_limit_is_a_422(started: tuple[httpx.AsyncClient, httpx.ASGITransport]) -> None:
    client, _ = started
    for query in ("after=nonsense", "after=alpha:123", "limit=0", "limit=1001"):
        response = await client.get(f"/v1/documents?{query}")
        assert response.status_code == 422, (query, response.text)
        assert response.json()["error"]["request_id"] == response.headers["x-request-id"]


async def test_the_client_follows_the_pages(started: tuple[httpx.AsyncClient, httpx.ASGITransport]) -> None:
    _, transport = started
    async with AsyncRagClient("http://gateway", api_key=ADMIN_KEY, transport=transport) as rag:
        first = await rag.documents_page(limit=4)
        second = await rag.documents_page(limit=4, after=first.next)
        assert first.next is not None
        assert not {d.document_id for d in first.documents} & {d.document_id for d in second.documents}
        assert len(await rag.documents()) == sum(LOADED.values())
        assert len(await rag.documents("beta")) == LOADED["beta"]
