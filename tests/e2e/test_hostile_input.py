"""Hostile input through HTTP: bad filters, huge bodies, odd ids and names, foreign encodings."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import nats
import pytest

from rag_gateway.api.documents import MULTIPART_OVERHEAD
from tests.support.http import ask, upload, upload_and_wait
from tests.support.rawhttp import RawConnection, multipart
from tests.support.system import UPLOAD_LIMIT, System

pytestmark = pytest.mark.e2e

INTERNALS = ("pydantic", "input_value", "type=", "Traceback", "errors.pydantic.dev")


def assert_clear_error(response: httpx.Response, status: int, code: str, *words: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, error
    assert error["request_id"] == response.headers["x-request-id"]
    for word in words:
        assert word in error["message"], error
    assert not any(internal in error["message"] for internal in INTERNALS), error
    return error


BAD_FILTERS: list[tuple[dict[str, Any], str]] = [
    ({"source": None}, "null"),
    ({"page": 1.5}, "decimal"),
    ({"team": {"nested": {"deeper": 1}}}, "object"),
    ({"team": [["x"]]}, "only strings or only integers"),
    ({"": "x"}, "filter key"),
    ({f"key{i}": "x" for i in range(40)}, "at most 16"),
    ({"team": ["v" * 500] * 60}, "bytes"),
]


async def test_bad_filters_are_422_at_the_gateway_before_anything_is_queued(
    system: System, client: httpx.AsyncClient
) -> None:
    nc = await nats.connect(system.stack.nats_url)
    try:
        queued = await nc.subscribe("rag.query.requested")
        for filters, reason in BAD_FILTERS:
            response = await client.post("/v1/query", json={"question": "What is the rate limit?", "filters": filters})
            assert_clear_error(response, 422, "invalid_request", "filters", reason)
        nan = b'{"question": "What is the rate limit?", "filters": {"page": NaN}}'
        response = await client.post("/v1/query", content=nan, headers={"content-type": "application/json"})
        assert_clear_error(response, 422, "invalid_request", "NaN")
        marker = await client.post("/v1/query", json={"question": "What is the API rate limit?"})
        assert marker.status_code == 200, marker.text
        seen = []
        for _ in range(50):  # everything queued so far arrives before or with the marker
            seen.append(json.loads((await queued.next_msg(timeout=10)).data)["query"]["request_id"])
            if seen[-1] == marker.json()["request_id"]:
                break
        assert seen == [marker.json()["request_id"]], "a rejected question reached the queue"
    finally:
        await nc.close()


async def test_a_50_mb_body_is_refused_with_413_before_it_is_read(system: System) -> None:
    head = (
        "POST /v1/query HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
        f"Content-Length: {50 * 1024 * 1024}\r\nX-Request-ID: huge-body\r\n\r\n"
    ).encode()
    async with RawConnection(system.base_url, timeout_s=10) as connection:
        await connection.send(head, b'{"question": "' + b"a" * 65536)  # the other 50 MB never come
        response = await connection.response()
    assert response.status == 413
    error = response.json()["error"]
    assert error["code"] == "too_large"
    assert "limit of 1048576 bytes" in error["message"]
    assert error["request_id"] == response.headers["x-request-id"]
    assert error["client_request_id"] == "huge-body"


async def test_an_upload_refused_before_it_is_read_names_the_file_limit(
    system: System, client: httpx.AsyncClient
) -> None:
    """Over the upload's whole limit (file + form) or just over the file's, the user reads one limit: the file's."""
    body, content_type = multipart(b"huge.md", b"a" * (UPLOAD_LIMIT + MULTIPART_OVERHEAD + 1), {})
    head = (
        "POST /v1/documents HTTP/1.1\r\nHost: gateway\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    async with RawConnection(system.base_url, timeout_s=10) as connection:
        await connection.send(head, body[:65536])  # the rest never comes: refused on its Content-Length
        response = await connection.response()
    assert response.status == 413
    early = response.json()["error"]
    assert early["code"] == "too_large"
    assert early["request_id"] == response.headers["x-request-id"]
    read = assert_clear_error(await upload(client, "big.md", b"a" * (UPLOAD_LIMIT + 1)), 413, "too_large")
    for error in (early, read):
        assert f"file is larger than the {UPLOAD_LIMIT} byte limit" in error["message"], error


async def test_a_chunked_body_over_the_limit_is_cut_off_with_413(system: System) -> None:
    head = (
        b"POST /v1/query HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    piece = b"b" * 65536
    async with RawConnection(system.base_url, timeout_s=10) as connection:
        await connection.send(head, b"e\r\n" + b'{"question": "' + b"\r\n")
        for _ in range(24):  # 1.5 MiB, no Content-Length: the server must count
            await connection.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        response = await connection.response()
    assert response.status == 413
    error = response.json()["error"]
    assert error["code"] == "too_large"
    assert "limit of 1048576 bytes" in error["message"]
    assert error["request_id"] == response.headers["x-request-id"]


@pytest.mark.parametrize("body", [b"not json", b'{"question": "What is the rate limit?",}'])
async def test_a_body_that_is_not_json_says_so(client: httpx.AsyncClient, body: bytes) -> None:
    headers = {"content-type": "application/json"}
    response = await client.post("/v1/query", content=body, headers=headers)
    error = assert_clear_error(response, 422, "invalid_request", "not valid JSON", "character")
    assert error["message"].startswith("body: "), error
    openai = await client.post("/v1/chat/completions", content=body, headers=headers)
    assert openai.status_code == 400, openai.text
    assert "not valid JSON" in openai.json()["error"]["message"]
    assert openai.json()["error"]["param"] is None


@pytest.mark.parametrize("odd", ["*", "%00", "%20", "x" * 5000, "%2A%0A", "0" * 32 + "%0A", "..%5C..%5Cetc"])
async def test_odd_document_ids_are_404_with_a_clear_message(client: httpx.AsyncClient, odd: str) -> None:
    for method in ("GET", "DELETE"):
        response = await client.request(method, f"/v1/documents/{odd}")
        assert_clear_error(response, 404, "document_not_found", "no document", "32 lowercase hexadecimal")


async def test_odd_document_ids_keep_the_connection_alive(system: System) -> None:
    async with RawConnection(system.base_url) as connection:
        for path in ("/v1/documents/%00", "/v1/documents/*", "/v1/documents/%20", "/healthz"):
            response = await connection.request("GET", path)
            assert response.status in (200, 404), response.body
            assert response.headers.get("connection", "keep-alive") != "close"
        assert response.json() == {"status": "ok"}


async def test_a_collection_name_with_a_trailing_newline_is_refused_everywhere(client: httpx.AsyncClient) -> None:
    query = await client.post("/v1/query", json={"question": "What is the API rate limit?", "collection": "default\n"})
    assert_clear_error(query, 422, "invalid_request", "collection", "lowercase")
    uploaded = await upload(client, "lookalike.md", b"# Look-alike\n\nThis must not be stored.\n", "default\n")
    assert_clear_error(uploaded, 422, "invalid_collection", "lowercase")
    listed = await client.get("/v1/documents", params={"collection": "default\n"})
    assert_clear_error(listed, 422, "invalid_collection")
    everything = (await client.get("/v1/documents")).json()["documents"]
    assert all(d["collection"] == d["collection"].strip() for d in everything)


@pytest.mark.parametrize(
    "filename",
    [b"evil\x00.md", b"two\nlines.md", "invoice\u202etxt.md".encode(), "x\u2066y.md".encode(), b"esc\x1b[2J.md"],
)
async def test_file_names_with_control_or_bidi_characters_are_refused(
    system: System, client: httpx.AsyncClient, filename: bytes
) -> None:
    body, content_type = multipart(filename, b"# Spoof\n\nA spoofed citation.\n", {"collection": "names"})
    async with RawConnection(system.base_url) as connection:
        response = await connection.request("POST", "/v1/documents", body, {"Content-Type": content_type})
    assert response.status == 422, response.body
    error = response.json()["error"]
    assert error["code"] == "invalid_file"
    assert "U+" in error["message"]
    assert error["request_id"] == response.headers["x-request-id"]
    listed = (await client.get("/v1/documents", params={"collection": "names"})).json()["documents"]
    assert listed == []


ENCODED = [
    ("shift-jis.txt", "shift_jis", "The yak keeper is named 山田太郎 and works in 大阪."),
    ("utf16-bom.txt", "utf-16", "The ibex keeper is named Zoë Brontë and works in Łódź."),
    ("utf16le.txt", "utf-16-le", "The okapi keeper is named Ærøskøbing Smith and works in Malmö."),
    ("utf16be.txt", "utf-16-be", "The tapir keeper is named Šárka Nováková and works in Brno."),
    ("utf32-bom.txt", "utf-32", "The dingo keeper is named Ιωάννα Παππά and works in Αθήνα."),
    ("utf32le.txt", "utf-32-le", "The quokka keeper is named Олег Петров and works in Києві."),
]


async def test_text_in_foreign_encodings_is_indexed_and_read_correctly(client: httpx.AsyncClient) -> None:
    statuses = await asyncio.gather(
        *(
            upload_and_wait(client, name, f"Keepers\n\n{text}\n".encode(encoding), "encodings")
            for name, encoding, text in ENCODED
        )
    )
    assert [s["status"] for s in statuses] == ["indexed"] * len(ENCODED), statuses
    for name, _, text in ENCODED:
        animal = text.split()[1]
        body = await ask(
            client,
            f"Who is the {animal} keeper and where do they work?",
            collection="encodings",
            filters={"source": name},
        )
        assert body["passages"], body
        assert text in body["passages"][0]["text"], (name, body["passages"][0]["text"])


async def test_a_file_of_two_megabytes_without_whitespace_leaves_its_collection_answering(
    client: httpx.AsyncClient,
) -> None:
    notes = b"# Badgers\n\nThe badger sett is inspected every Thursday by ranger Odile Marchetti.\n"
    assert (await upload_and_wait(client, "badgers.md", notes, "blob"))["status"] in ("indexed", "unchanged")
    status = await upload_and_wait(client, "blob.txt", b"q" * (UPLOAD_LIMIT - 4096), "blob")
    assert status["status"] in ("indexed", "unchanged")
    assert status["chunks"] >= (UPLOAD_LIMIT - 4096) // 2000
    answer = await ask(client, "Who inspects the badger sett and when?", collection="blob")
    assert "Odile Marchetti" in answer["answer"]
    forced = await ask(client, "What is in the blob?", collection="blob", filters={"source": "blob.txt"})
    assert forced["passages"]
    assert all(len(p["text"]) <= 2001 for p in forced["passages"])
