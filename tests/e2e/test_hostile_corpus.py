"""Over a hundred hostile files through the HTTP API: each ends indexed or failed, and says why.

The corpus is generated (tests/support/hostile_corpus.py): corrupt, encrypted and bomb PDFs,
twenty encodings, huge lines, thousands of headings, binary junk, empty files, hostile names
and ten bodies for one name at once. Nothing may hang in ``queued``/``processing``, nothing may
answer 500, failures must be in the document's status, and the collection must still answer.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.support.hostile_corpus import HostileFile, build_corpus
from tests.support.http import FINAL, ask
from tests.support.rawhttp import RawConnection, RawResponse, multipart
from tests.support.system import System

pytestmark = pytest.mark.e2e

COLLECTION = "hostile"
BUDGET_S = 150


@pytest.fixture(scope="module")
def hostile_corpus() -> list[HostileFile]:
    return build_corpus(seed=7)


async def send(system: System, file: HostileFile) -> tuple[HostileFile, RawResponse]:
    body, content_type = multipart(file.name, file.content, {"collection": COLLECTION})
    async with RawConnection(system.base_url, timeout_s=60) as connection:
        response = await connection.request("POST", "/v1/documents", body, {"Content-Type": content_type})
    return file, response


async def test_hostile_corpus_ends_indexed_or_failed_and_the_collection_still_answers(
    system: System, client: httpx.AsyncClient, hostile_corpus: list[HostileFile]
) -> None:
    assert len(hostile_corpus) >= 100
    started = time.monotonic()
    duplicates = [f for f in hostile_corpus if f.group == "duplicate"]
    results = list(await asyncio.gather(*(send(system, f) for f in duplicates)))  # all at once
    gate = asyncio.Semaphore(6)

    async def gated(file: HostileFile) -> tuple[HostileFile, RawResponse]:
        async with gate:
            return await send(system, file)

    results += await asyncio.gather(*(gated(f) for f in hostile_corpus if f.group != "duplicate"))

    accepted: dict[str, list[HostileFile]] = {}
    for file, response in results:
        assert response.status < 500, (file.name, response.status, response.body[:300])
        if file.expect == "rejected":
            assert 400 <= response.status < 500, (file.name, file.why, response.body[:300])
            error = response.json()["error"]
            assert error["message"], error
            assert error["request_id"], error
            continue
        assert response.status == 202, (file.name, file.why, response.body[:300])
        accepted.setdefault(response.json()["document_id"], []).append(file)

    records: dict[str, dict[str, object]] = {}
    while True:
        # Every page: the corpus holds more documents than one page of the listing.
        records, after = {}, None
        while True:
            params: dict[str, str | int] = {"collection": COLLECTION, "limit": 1000}
            if after:
                params["after"] = after
            listing = await client.get("/v1/documents", params=params)
            assert listing.status_code == 200, listing.text
            records.update({str(d["document_id"]): d for d in listing.json()["documents"]})
            after = listing.json().get("next")
            if not after:
                break
        waiting = {
            files[0].name: records.get(doc_id, {}).get("status")
            for doc_id, files in accepted.items()
            if records.get(doc_id, {}).get("status") not in FINAL
        }
        if not waiting:
            break
        assert time.monotonic() - started < BUDGET_S, f"still not final after {BUDGET_S}s: {waiting}"
        await asyncio.sleep(0.5)

    outcomes: dict[str, int] = {}
    for doc_id, files in accepted.items():
        record = records[doc_id]
        status = str(record["status"])
        outcomes[status] = outcomes.get(status, 0) + 1
        expectations = {f.expect for f in files}
        if status == "failed":
            error = str(record.get("error") or "")
            assert error, (files[0].name, error)
            assert len(error) < 2000, (files[0].name, error)
            assert "Traceback" not in error, (files[0].name, error)
            assert "indexed" not in expectations, (files[0].name, files[0].why, error)
        else:
            assert "failed" not in expectations, (files[0].name, files[0].why, record)
            assert int(str(record["chunks"])) > 0, (files[0].name, record)
        detail = await client.get(f"/v1/documents/{doc_id}")
        assert detail.status_code == 200
        assert detail.json()["status"] == status

    assert outcomes.get("failed", 0) >= 15, outcomes
    assert outcomes.get("indexed", 0) >= 40, outcomes
    answer = await ask(client, "Who is the lighthouse keeper on Skerry Island?", collection=COLLECTION)
    assert "Morwenna Quill" in answer["answer"], answer["answer"]
    assert time.monotonic() - started < BUDGET_S + 20
