"""Ingest throughput end to end (HTTP upload → every document ``indexed``) and of the embedder alone."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.corpus import BenchCorpus
from benchmarks.cpu import snapshot
from benchmarks.system import stack_options
from rag_common.store.embedding import Embedder
from rag_devrun.stack import Stack

FINAL_STATES = {"indexed", "unchanged", "failed"}
POLL_S = 0.1  # status poll interval: the end time is at most this late


@dataclass
class IngestRun:
    documents: int
    chunks: int  # as the status records report them
    seconds: float  # first upload sent → last document seen in a final state
    upload_seconds: float  # all 202s received
    index_busy_seconds: float  # sum of the ingest service's "index" stage times (parse+chunk+embed+store)
    cpu_seconds: float | None = None  # this process tree's CPU over ``seconds`` (None off Linux)
    failed: list[str] = field(default_factory=list)

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.seconds

    @property
    def cpu_ms_per_chunk(self) -> float | None:
        return round(self.cpu_seconds * 1000 / self.chunks, 2) if self.cpu_seconds and self.chunks else None

    def to_json(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "upload_seconds": round(self.upload_seconds, 3),
            "index_busy_seconds": round(self.index_busy_seconds, 3),
            "cpu_ms_per_chunk": self.cpu_ms_per_chunk,
            "failed": self.failed,
        }


def _index_busy_seconds(stack: Stack) -> float:
    total = 0.0
    for telemetry in stack.telemetries:
        if telemetry.service == "ingest":
            value = telemetry.registry.get_sample_value(
                "rag_stage_duration_seconds_sum", {"service": "ingest", "stage": "index"}
            )
            total += value or 0.0
    return total


async def ingest_through_http(
    corpus: BenchCorpus, data_dir: Path, nats_url: str, model_dir: Path, timeout_s: float
) -> IngestRun:
    """Start the whole system on ``data_dir``, upload every document, wait until each is final."""
    async with (
        Stack(stack_options(data_dir, nats_url, model_dir)) as stack,
        httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client,
    ):
        cpu_before = snapshot()
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        ids: list[tuple[str, str]] = []
        for doc in corpus.documents:
            if time.monotonic() > deadline:
                raise TimeoutError(f"uploaded {len(ids)} of {len(corpus.documents)} documents in {timeout_s:.0f}s")
            response = await client.post("/v1/documents", files={"file": (doc.source, doc.data)})
            response.raise_for_status()
            ids.append((doc.source, response.json()["document_id"]))
        uploaded = time.perf_counter()
        # Documents finish roughly in upload order (a work queue): poll the oldest unfinished one
        # only, so status polling adds about one request per interval to the system under test.
        pending = list(ids)
        records: dict[str, dict[str, Any]] = {}
        while pending:
            source, document_id = pending[0]
            record = (await client.get(f"/v1/documents/{document_id}")).json()
            if record.get("status") in FINAL_STATES:
                records[source] = record
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(pending)} of {len(ids)} documents not indexed within {timeout_s:.0f}s")
            await asyncio.sleep(POLL_S)
        finished = time.perf_counter()
        cpu_after = snapshot()
        busy = _index_busy_seconds(stack)
    return IngestRun(
        documents=len(ids),
        chunks=sum(int(r.get("chunks") or 0) for r in records.values()),
        seconds=finished - started,
        upload_seconds=uploaded - started,
        index_busy_seconds=busy,
        cpu_seconds=cpu_after.own - cpu_before.own if cpu_before and cpu_after else None,
        failed=[s for s, r in records.items() if r.get("status") != "indexed"],
    )


def embed_only(embedder: Embedder, corpus: BenchCorpus) -> tuple[float, float | None]:
    """Seconds to embed every chunk text, dense + sparse, one call per document as ingest does,
    and this process tree's CPU seconds meanwhile (None off Linux)."""
    cpu_before = snapshot()
    started = time.perf_counter()
    for doc in corpus.documents:
        embedder.embed_passages(doc.chunk_texts)
    seconds = time.perf_counter() - started
    cpu_after = snapshot()
    return seconds, (cpu_after.own - cpu_before.own if cpu_before and cpu_after else None)
