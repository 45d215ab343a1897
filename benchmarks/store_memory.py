"""Memory of the store process (ingest + retriever, embedded Qdrant) across a large hostile batch.

Starts the system as separate processes (as ``make chaos`` does), uploads ``--docs`` hostile
documents (long lines without spaces, many headings, repeated text), waits until each is final,
deletes them all, and reads the store process's resident memory (``VmRSS``) at each step.
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

from benchmarks.chaos import PROCESSES, ROOT, Cluster, free_port, wait_ready
from rag_devrun.natsserver import LocalNatsServer


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS")


def hostile(i: int, rng: random.Random) -> bytes:
    kind = i % 4
    if kind == 0:  # one long line without whitespace
        return ("".join(rng.choices(string.ascii_letters + ".,;", k=60_000)) + "\n").encode()
    if kind == 1:  # many headings
        return "".join(f"# H{i}-{j}\n\nline {j} of {i}\n\n" for j in range(1500)).encode()
    if kind == 2:  # repeated sentences
        return (f"Document {i} repeats this sentence about otters and pools. " * 1500).encode()
    return " ".join(rng.choices(string.ascii_lowercase, k=40_000)).encode()  # single letters


async def final(client: httpx.AsyncClient, ids: list[str], timeout_s: float) -> dict[str, int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        listed = (await client.get("/v1/documents", timeout=30)).json()["documents"]
        states = [d["status"] for d in listed if d["document_id"] in ids]
        # the listing can come back empty while the bucket is being written: wait for every id
        if len(states) == len(ids) and all(s in ("indexed", "unchanged", "failed") for s in states):
            return {s: states.count(s) for s in set(states)}
        await asyncio.sleep(1)
    raise RuntimeError("documents not final in time")


async def run(docs: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="rag-memory-"))
    nats = LocalNatsServer(work / "nats")
    nats.start()
    cluster = Cluster(work, nats.url, free_port())
    figures: dict[str, Any] = {"documents": docs}
    try:
        for name in PROCESSES:
            cluster.start(name)
        pid = cluster.procs["store"].pid
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{cluster.port}", timeout=60) as client:
            await wait_ready(client, 180)
            figures["rss_mb_ready"] = rss_mb(pid)
            rng = random.Random(7)
            ids: list[str] = []
            started = time.monotonic()
            for start in range(0, docs, 8):
                batch = [
                    client.post("/v1/documents", files={"file": (f"hostile-{i}.md", hostile(i, rng))})
                    for i in range(start, min(docs, start + 8))
                ]
                ids += [r.json()["document_id"] for r in await asyncio.gather(*batch)]
            figures["states"] = await final(client, ids, 1200)
            figures["ingest_s"] = round(time.monotonic() - started, 1)
            figures["rss_mb_after_ingest"] = rss_mb(pid)
            for document_id in ids:
                await client.delete(f"/v1/documents/{document_id}")
            deadline = time.monotonic() + 300
            for _ in range(300):
                remaining = (await client.get("/v1/documents")).json()["documents"]
                if not remaining or time.monotonic() > deadline:
                    break
                await asyncio.sleep(1)
            figures["left_after_delete"] = len(remaining)
            figures["rss_mb_after_delete"] = rss_mb(pid)
            await asyncio.sleep(10)
            figures["rss_mb_10s_later"] = rss_mb(pid)
    finally:
        cluster.stop_all()
        nats.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--out", default=str(ROOT / "reports" / "store-memory.json"))
    args = parser.parse_args()
    figures = asyncio.run(run(args.docs))
    Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
