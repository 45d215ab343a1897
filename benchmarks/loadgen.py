"""An HTTP load generator for ``POST /v1/query``, run as its own process.

The system under test runs in the benchmark's process (one event loop for every service and the
gateway); a client in that loop would steal time from the server it measures. So the client runs
here, in a child process: ``python -m benchmarks.loadgen`` reads a JSON ``LoadSpec`` on stdin and
prints a JSON ``LoadResult`` on stdout. Every loop is bounded by a request count and a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class LoadSpec:
    base_url: str
    questions: list[str]
    concurrency: int
    max_requests: int
    max_seconds: float
    warmup: int = 0  # sequential requests before measuring, not counted
    collection: str = "default"
    request_timeout_s: float = 30.0


@dataclass
class LoadResult:
    concurrency: int
    ok: int = 0
    errors: int = 0
    elapsed_s: float = 0.0  # first request sent → last response received
    latencies_ms: list[float] = field(default_factory=list)  # of ok requests, in completion order
    timings_ms: list[dict[str, float]] = field(default_factory=list)  # each ok answer's timings_ms
    cached: list[bool] = field(default_factory=list)  # each ok answer's ``cached``
    error_samples: list[str] = field(default_factory=list)
    stopped_by: str = "count"  # "count" or "time"

    @property
    def per_second(self) -> float:
        return self.ok / self.elapsed_s if self.elapsed_s > 0 else 0.0


async def _ask(client: httpx.AsyncClient, spec: LoadSpec, question: str) -> tuple[float, dict[str, Any] | str]:
    started = time.perf_counter()
    try:
        response = await client.post("/v1/query", json={"question": question, "collection": spec.collection})
    except httpx.HTTPError as exc:
        return (time.perf_counter() - started) * 1000, f"{type(exc).__name__}: {exc}"
    ms = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        return ms, f"HTTP {response.status_code}: {response.text[:200]}"
    body: dict[str, Any] = response.json()
    return ms, body


async def run_load(spec: LoadSpec) -> LoadResult:
    """Ask ``spec.questions`` round robin from ``concurrency`` workers until the count or the deadline."""
    result = LoadResult(concurrency=spec.concurrency)
    limits = httpx.Limits(max_connections=spec.concurrency + 2, max_keepalive_connections=spec.concurrency + 2)
    timeout = httpx.Timeout(spec.request_timeout_s)
    async with httpx.AsyncClient(base_url=spec.base_url, limits=limits, timeout=timeout) as client:
        for i in range(spec.warmup):
            await _ask(client, spec, spec.questions[i % len(spec.questions)])
        issued = 0
        last_done = started = time.perf_counter()
        deadline = started + spec.max_seconds

        async def worker() -> None:
            nonlocal issued, last_done
            while issued < spec.max_requests:
                if time.perf_counter() >= deadline:
                    result.stopped_by = "time"
                    return
                question = spec.questions[issued % len(spec.questions)]
                issued += 1
                ms, outcome = await _ask(client, spec, question)
                last_done = time.perf_counter()
                if isinstance(outcome, str):
                    result.errors += 1
                    if len(result.error_samples) < 5:
                        result.error_samples.append(outcome)
                else:
                    result.ok += 1
                    result.latencies_ms.append(round(ms, 3))
                    result.timings_ms.append(dict(outcome.get("timings_ms", {})))
                    result.cached.append(bool(outcome.get("cached", False)))

        # A request in flight at the deadline may take up to its own timeout: bound the whole loop.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(worker() for _ in range(spec.concurrency))),
                timeout=spec.max_seconds + spec.request_timeout_s,
            )
        result.elapsed_s = round(last_done - started, 6)
    return result


async def run_load_process(spec: LoadSpec) -> LoadResult:
    """Run ``run_load`` in a child process (killed if it overruns its own bounds) and return its result."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.loadgen",
        cwd=ROOT,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    limit = spec.max_seconds + spec.request_timeout_s * (spec.warmup + 2) + 30
    try:
        out, err = await asyncio.wait_for(process.communicate(json.dumps(asdict(spec)).encode()), timeout=limit)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise RuntimeError(f"load generator overran {limit:.0f}s") from None
    if process.returncode != 0:
        raise RuntimeError(f"load generator failed ({process.returncode}): {err.decode()[-2000:]}")
    data = json.loads(out)
    return LoadResult(**data)


def main() -> None:
    spec = LoadSpec(**json.load(sys.stdin))
    result = asyncio.run(run_load(spec))
    json.dump(asdict(result), sys.stdout)


if __name__ == "__main__":
    main()
