"""Memory of the store process (ingest + retriever, embedded Qdrant) across a large hostile batch.

Starts the system as separate processes (as ``make chaos`` does), uploads ``--docs`` hostile
documents (long lines without spaces, many headings, repeated text), waits until each is final,
deletes them all, and reads the store process's resident memory (``VmRSS``) and its own part of it
(``RssAnon``: without the pages mapped from the store's files, which are page cache) at each step.
Writes ``reports/store-memory.json``. Loopback only, bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import string
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.chaos import MODEL_DIR, ROOT
from rag_common.store.memory import anonymous_mb
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.processes import Cluster, free_port


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS")


async def gone(client: httpx.AsyncClient, ids: list[str], timeout_s: float) -> int:
    """Wait until every deleted document's record is gone (404); how many are left at the deadline."""
    deadline = time.monotonic() + timeout_s
    pending = list(ids)
    while pending and time.monotonic() < deadline:
        if (await client.get(f"/v1/documents/{pending[0]}", timeout=30)).status_code == 404:
            pending.pop(0)
            continue
        await asyncio.sleep(0.5)
    return len(pending)


def hostile(i: int, rng: random.Random) -> bytes:
    kind = i % 4
    if kind == 0:  # one long line without whitespace
        return ("".join(rng.choices(string.ascii_letters + ".,;", k=60_000)) + "\n").encode()
    if kind == 1:  # many headings
        return "".join(f"# H{i}-{j}\n\nline {j} of {i}\n\n" for j in range(1500)).encode()
    if kind == 2:  # repeated sentences
        return (f"Document {i} repeats this sentence about otters and pools. " * 1500).encode()
    return " ".join(rng.choices(string.ascii_lowercase, k=40_000)).encode()  # single letters


FINAL = ("indexed", "unchanged", "failed")


async def final(client: httpx.AsyncClient, ids: list[str], timeout_s: float) -> dict[str, int]:
    """Wait until every document is final; its own status record, polled oldest first.

    The listing (``GET /v1/documents``) was used before and never showed all 200 records in
    time, so the wait ended with no states; one ``GET /v1/documents/{id}`` per unfinished
    document at a time keeps the polling cheap and exact.
    """
    deadline = time.monotonic() + timeout_s
    states: dict[str, str] = {}
    pending = list(ids)
    while pending and time.monotonic() < deadline:
        response = await client.get(f"/v1/documents/{pending[0]}", timeout=30)
        status = response.json().get("status") if response.status_code == 200 else None
        if status in FINAL:
            states[pending.pop(0)] = str(status)
            continue
        await asyncio.sleep(0.5)
    counts: dict[str, int] = {}
    for status in states.values():
        counts[status] = counts.get(status, 0) + 1
    if pending:  # keep going: the memory after the deletes is still worth reading
        counts["not_final_at_deadline"] = len(pending)
    return counts


async def run(docs: int, final_timeout_s: float = 1200.0) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="rag-memory-"))
    nats = LocalNatsServer(work / "nats")
    nats.start()
    cluster = Cluster(work, nats.url, free_port(), env={"RAG_MODEL_DIR": str(MODEL_DIR), "HF_HUB_OFFLINE": "1"})
    figures: dict[str, Any] = {"documents": docs}
    try:
        cluster.start_all()
        pid = cluster.procs["store"].pid
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{cluster.port}", timeout=60) as client:
            await cluster.wait_ready(180)
            figures["rss_mb_ready"] = rss_mb(pid)
            figures["anon_mb_ready"] = round(anonymous_mb(pid), 1)
            rng = random.Random(7)
            ids: list[str] = []
            started = time.monotonic()
            for start in range(0, docs, 8):
                batch = [
                    client.post("/v1/documents", files={"file": (f"hostile-{i}.md", hostile(i, rng))})
                    for i in range(start, min(docs, start + 8))
                ]
                ids += [r.json()["document_id"] for r in await asyncio.gather(*batch)]
            figures["states"] = await final(client, ids, final_timeout_s)
            figures["ingest_s"] = round(time.monotonic() - started, 1)
            figures["rss_mb_after_ingest"] = rss_mb(pid)
            figures["anon_mb_after_ingest"] = round(anonymous_mb(pid), 1)
            for document_id in ids:
                await client.delete(f"/v1/documents/{document_id}")
            figures["left_after_delete"] = await gone(client, ids, 300)
            figures["rss_mb_after_delete"] = rss_mb(pid)
            figures["anon_mb_after_delete"] = round(anonymous_mb(pid), 1)
            await asyncio.sleep(10)
            figures["rss_mb_10s_later"] = rss_mb(pid)
            figures["anon_mb_10s_later"] = round(anonymous_mb(pid), 1)
    finally:
        cluster.stop_all()
        nats.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--final-timeout-s", type=float, default=1200.0, help="how long to wait for the uploads")
    parser.add_argument("--out", default=str(ROOT / "reports" / "store-memory.json"))
    args = parser.parse_args()
    figures = asyncio.run(run(args.docs, args.final_timeout_s))
    Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
