"""A client's ``X-Request-ID`` labels its request and nothing more: it never routes or dedupes."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.http import upload_and_wait, wait_for_status

pytestmark = pytest.mark.e2e

SHARED_ID = "sameid42"


async def _two_collections(client: httpx.AsyncClient) -> None:
    first = await upload_and_wait(
        client, "otters.md", b"# Otters\n\nThe otter keeper of Brightwater is called Ingrid Vale.\n", "rid-a"
    )
    second = await upload_and_wait(
        client, "herons.md", b"# Herons\n\nThe heron keeper of Brightwater is called Tomas Reed.\n", "rid-b"
    )
    assert {first["status"], second["status"]} <= {"indexed", "unchanged"}


async def test_concurrent_queries_with_the_same_header_get_their_own_answers(client: httpx.AsyncClient) -> None:
    await _two_collections(client)
    headers = {"X-Request-ID": SHARED_ID}
    for _ in range(3):
        otters, herons = await asyncio.gather(
            client.post(
                "/v1/query", json={"question": "Who is the otter keeper?", "collection": "rid-a"}, headers=headers
            ),
            client.post(
                "/v1/query", json={"question": "Who is the heron keeper?", "collection": "rid-b"}, headers=headers
            ),
        )
        assert otters.status_code == herons.status_code == 200, (otters.text, herons.text)
        a, b = otters.json(), herons.json()
        assert a["collection"] == "rid-a"
        assert {p["source"] for p in a["passages"]} == {"otters.md"}
        assert b["collection"] == "rid-b"
        assert {p["source"] for p in b["passages"]} == {"herons.md"}
        assert "Ingrid Vale" in a["answer"]
        assert "Tomas Reed" in b["answer"]
        # The client's id labels both; each request has its own server-side id.
        assert a["client_request_id"] == b["client_request_id"] == SHARED_ID
        assert a["request_id"] != b["request_id"]
        assert SHARED_ID not in (a["request_id"], b["request_id"])
        assert otters.headers["x-request-id"] == a["request_id"]


async def test_sequential_reuse_of_a_request_id_answers_every_time(client: httpx.AsyncClient) -> None:
    await _two_collections(client)
    headers = {"X-Request-ID": "reused7"}
    for question in ("Who is the otter keeper?", "Who keeps the otters at Brightwater?"):
        response = await client.post("/v1/query", json={"question": question, "collection": "rid-a"}, headers=headers)
        assert response.status_code == 200, response.text
        assert "Ingrid Vale" in response.json()["answer"]


async def test_two_uploads_with_the_same_header_are_both_processed(client: httpx.AsyncClient) -> None:
    headers = {"X-Request-ID": "upload-same-1"}
    responses = [
        await client.post(
            "/v1/documents",
            files={"file": (name, body)},
            data={"collection": "rid-up"},
            headers=headers,
        )
        for name, body in (
            ("lynx.md", b"# Lynx\n\nThe lynx enclosure opens at nine.\n"),
            ("ibis.md", b"# Ibis\n\nThe ibis enclosure opens at ten.\n"),
        )
    ]
    assert [r.status_code for r in responses] == [202, 202]
    ids = [r.json()["request_id"] for r in responses]
    assert ids[0] != ids[1]
    assert all(r.json()["client_request_id"] == "upload-same-1" for r in responses)
    statuses = [await wait_for_status(client, r.json()["document_id"], timeout_s=60) for r in responses]
    assert [s["status"] for s in statuses] == ["indexed", "indexed"]


async def test_errors_carry_the_server_request_id_and_the_clients_label(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/documents/" + "0" * 32, headers={"X-Request-ID": "lost-doc"})
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["request_id"] == response.headers["x-request-id"] != "lost-doc"
    assert error["client_request_id"] == "lost-doc"
    # A header that is not a sane label is not echoed at all.
    odd = await client.post("/v1/documents", files={"file": ("x.exe", b"MZ")}, headers={"X-Request-ID": "a b c"})
    assert odd.status_code == 415
    assert "client_request_id" not in odd.json()["error"]
