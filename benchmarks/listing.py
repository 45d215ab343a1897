"""Listing cost against the documents of other collections (``make bench``, group ``listing``).

A gateway, the router and the evaluator on a private nats-server (a listing reads the buckets only;
the router answers a greeting without retrieval or a model and the evaluator passes it on, so a chat
completion costs its model check and two JetStream hops). One collection holds one document; ten
other collections grow to 10, 1,000 and 10,000 documents, their status records and index keys
written as an upload writes them (directly: indexing 10,000 files would measure ingest, not
listings), plus 800 documents uploaded and deleted (the history a listing once read in full). At
each size, the p50 of listing the one-document collection, ``/v1/collections`` (whose counts are
checked), ``/v1/models`` and a chat completion asked of the one-document collection.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import nats

from benchmarks.system import private_nats
from rag_common.store.docindex import DocumentIndex
from rag_common.store.documents import StatusStore, document_id_for
from rag_common.wire import subjects
from rag_common.wire.messages import DocumentStatus
from rag_devrun.stack import Stack, StackOptions
from rag_scorecard.stats import median

SIZES = (10, 1_000, 10_000)
QUICK_SIZES = (10, 1_000)
HISTORY = 800
OTHER_COLLECTIONS = 10
BATCH = 50

Record = Callable[[str, float, str, str, dict[str, Any] | None], None]


async def _write(store: StatusStore, index: DocumentIndex, collection: str, source: str) -> str:
    """A document's record and index keys, as an accepted upload leaves them."""
    document_id = document_id_for(collection, source)
    record = DocumentStatus(document_id=document_id, collection=collection, source=source, status="indexed")
    await store.kv.put(document_id, record.model_dump_json().encode())
    await index.add(collection, document_id)
    return document_id


async def _written(batch: Callable[[], Awaitable[object]], attempts: int = 5) -> None:
    """Write one batch, again if it stalls (a record is put, an index key created if missing:
    repeating one changes nothing)."""
    for _ in range(attempts - 1):
        try:
            await asyncio.wait_for(batch(), 60)
            return
        except TimeoutError:
            print("  a batch of writes stalled for 60 s: writing it again", flush=True)
    await asyncio.wait_for(batch(), 60)


CHAT = {"model": "target", "messages": [{"role": "user", "content": "hello"}]}
REQUESTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "documents": ("GET", "/v1/documents", {"params": {"collection": "target"}}),
    "collections": ("GET", "/v1/collections", {}),
    "models": ("GET", "/v1/models", {}),
    "chat": ("POST", "/v1/chat/completions", {"json": CHAT}),
}
WHAT = {
    "documents": "GET /v1/documents?collection= of a one-document collection",
    "collections": "GET /v1/collections",
    "models": "GET /v1/models",
    "chat": "POST /v1/chat/completions (a greeting: the model check, then a canned answer)",
}


async def _measure(client: httpx.AsyncClient, rounds: int, per_round: int, pause_s: float) -> dict[str, float]:
    """p50 ms of each request, taken in ``rounds`` rounds of ``per_round`` each, the requests taking
    turns and the rounds ``pause_s`` apart: a burst of other work on the shared machine then lands
    on every request alike and on a few samples, not on one request's whole measurement."""
    times: dict[str, list[float]] = {name: [] for name in REQUESTS}
    for round_ in range(rounds):
        if round_:
            await asyncio.sleep(pause_s)
        for name, (method, path, request) in REQUESTS.items():
            for _ in range(per_round):
                started = time.perf_counter()
                response = await client.request(method, path, **request)
                times[name].append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, response.text
    return {name: median(samples) for name, samples in times.items()}


async def _check_counts(client: httpx.AsyncClient, elsewhere: int) -> None:
    """/v1/collections counts exactly what was written (a flat listing that miscounts is no figure)."""
    listed = (await client.get("/v1/collections")).json()["collections"]
    expected = {f"other-{c}": len(range(c, elsewhere, OTHER_COLLECTIONS)) for c in range(OTHER_COLLECTIONS)}
    assert {c["name"]: c["documents"] for c in listed} == {"target": 1, **expected}, listed


async def run(
    work: Path,
    record: Record,
    *,
    sizes: tuple[int, ...] = SIZES,
    rounds: int = 12,
    per_round: int = 5,
    pause_s: float = 0.5,
) -> None:
    async with private_nats(work / "nats") as server:
        services = ("router", "evaluator")
        options = StackOptions(data_dir=work, nats_url=server.url, port=0, metrics=False, services=services)
        async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
            connection = await nats.connect(server.url)
            try:
                js = connection.jetstream()
                index = DocumentIndex(js, await js.key_value(subjects.DOC_INDEX_BUCKET))
                store = StatusStore(await js.key_value(subjects.DOC_STATUS_BUCKET), index)
                await _write(store, index, "target", "only.md")
                for start in range(0, HISTORY, BATCH):  # uploaded, then deleted
                    ids = await asyncio.gather(
                        *(_write(store, index, "history", f"h{i}.md") for i in range(start, start + BATCH))
                    )
                    for document_id in ids:
                        await store.start_delete(document_id, "bench")
                        await store.forget(document_id)
                written = 0
                figures: dict[str, dict[int, float]] = {name: {} for name in WHAT}
                for size in sizes:
                    while written < size:
                        batch = range(written, min(size, written + BATCH))
                        await _written(
                            lambda b=batch: asyncio.gather(  # type: ignore[misc]
                                *(_write(store, index, f"other-{i % OTHER_COLLECTIONS}", f"d{i}.md") for i in b)
                            )
                        )
                        written = batch.stop
                    await _check_counts(client, size)
                    for name, ms in (await _measure(client, rounds, per_round, pause_s)).items():
                        figures[name][size] = ms
                    print(
                        f"  {size:>6} documents elsewhere: list one-document collection "
                        f"{figures['documents'][size]:.2f} ms, /v1/collections {figures['collections'][size]:.2f} ms,"
                        f" /v1/models {figures['models'][size]:.2f} ms, chat {figures['chat'][size]:.2f} ms",
                        flush=True,
                    )
            finally:
                await connection.close()
    low, high = sizes[0], sizes[-1]
    what = WHAT
    for name, by_size in figures.items():
        detail = {"p50_ms_by_documents_elsewhere": by_size, "history_deleted": HISTORY}
        record(f"listing.{name}_p50_ms_at_{low}", by_size[low], "ms", f"{what[name]}, {low} documents elsewhere", None)
        record(
            f"listing.{name}_p50_ms_at_{high}", by_size[high], "ms", f"{what[name]}, {high} documents elsewhere", None
        )
        record(
            f"listing.{name}_ratio",
            by_size[high] / by_size[low],
            "ratio",
            f"{what[name]}: p50 with {high} / with {low} documents in other collections (1.0 = flat)",
            detail,
        )
