"""Load a folder of documents through the gateway's HTTP API and wait until each is done."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from rag_common.wire.formats import SUPPORTED_EXTENSIONS

FINAL_STATES = {"indexed", "unchanged", "failed"}


@dataclass
class LoadResult:
    statuses: dict[str, dict[str, object]]  # relative path -> final status record
    seconds: float

    @property
    def failed(self) -> list[str]:
        return [path for path, s in self.statuses.items() if s.get("status") == "failed"]

    @property
    def chunks(self) -> int:
        return sum(int(s.get("chunks", 0) or 0) for s in self.statuses.values())  # type: ignore[call-overload]


def corpus_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS)


async def load_corpus(
    client: httpx.AsyncClient,
    folder: Path,
    collection: str = "default",
    *,
    timeout_s: float = 600.0,
    progress: Callable[[int, int], None] | None = None,
) -> LoadResult:
    """Upload every supported file (its path relative to ``folder`` is its source name) and wait.

    Re-running is cheap: unchanged files report ``unchanged`` and nothing is re-embedded.
    """
    started = time.perf_counter()
    ids: dict[str, str] = {}
    for path in corpus_files(folder):
        relative = path.relative_to(folder).as_posix()
        response = await client.post(
            "/v1/documents",
            files={"file": (relative, path.read_bytes())},
            data={"collection": collection},
        )
        response.raise_for_status()
        ids[relative] = response.json()["document_id"]
    statuses: dict[str, dict[str, object]] = {}
    deadline = time.monotonic() + timeout_s
    while len(statuses) < len(ids):
        for relative, document_id in ids.items():
            if relative in statuses:
                continue
            record = (await client.get(f"/v1/documents/{document_id}")).json()
            if record.get("status") in FINAL_STATES:
                statuses[relative] = record
        if progress:
            progress(len(statuses), len(ids))
        if len(statuses) < len(ids):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(ids) - len(statuses)} documents not indexed within {timeout_s}s")
            await asyncio.sleep(0.1)
    return LoadResult(statuses=statuses, seconds=time.perf_counter() - started)
