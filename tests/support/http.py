"""HTTP helpers for end-to-end tests: ask, upload, wait for a document's final status or for readiness."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.polling import eventually

FINAL = {"indexed", "unchanged", "failed"}


async def ask(client: httpx.AsyncClient, question: str, **fields: Any) -> dict[str, Any]:
    response = await client.post("/v1/query", json={"question": question, **fields})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def upload(
    client: httpx.AsyncClient, name: str, content: bytes, collection: str = "default", **data: str
) -> httpx.Response:
    return await client.post("/v1/documents", files={"file": (name, content)}, data={"collection": collection, **data})


async def wait_for_status(client: httpx.AsyncClient, document_id: str, timeout_s: float = 60) -> dict[str, Any]:
    """Poll the status endpoint until the document reaches a final state (bounded in time)."""

    async def record() -> dict[str, Any]:
        body: dict[str, Any] = (await client.get(f"/v1/documents/{document_id}")).json()
        return body

    return await eventually(
        record, lambda r: r.get("status") in FINAL, timeout_s=timeout_s, what=f"document {document_id} final"
    )


async def wait_until_ready(client: httpx.AsyncClient, timeout_s: float, what: str) -> None:
    """Poll ``/readyz`` until the system says ready (a server still starting refuses connections)."""

    async def ready() -> bool:
        try:
            response = await client.get("/readyz")
        except httpx.TransportError:
            return False
        return response.status_code == 200 and response.json()["status"] == "ready"

    await eventually(ready, bool, timeout_s=timeout_s, what=what)


async def upload_and_wait(
    client: httpx.AsyncClient, name: str, content: bytes, collection: str = "default"
) -> dict[str, Any]:
    response = await upload(client, name, content, collection)
    assert response.status_code == 202, response.text
    return await wait_for_status(client, response.json()["document_id"])


def parse_sse(text: str) -> list[tuple[str, Any]]:
    """(event, data) pairs of a text/event-stream body."""
    events = []
    for block in text.strip().split("\n\n"):
        event, data = "message", []
        for line in block.splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            events.append((event, json.loads("\n".join(data))))
    return events
