"""Query latency (end to end and per stage) and throughput through HTTP."""

from __future__ import annotations

from typing import Any

from benchmarks.loadgen import LoadResult, LoadSpec, run_load_process
from rag_scorecard.stats import summarize

STAGES = ("router", "retriever", "generator", "evaluator")


def stage_summaries(result: LoadResult) -> dict[str, dict[str, float | int]]:
    """Per-stage latency from each answer's ``timings_ms``, plus what the stages do not account for.

    ``total`` is the gateway's own measure (question received → answer ready); ``hops`` is
    ``total`` minus the four stages' work: NATS hops, JetStream acks, (de)serialisation, queueing.
    """
    summaries: dict[str, dict[str, float | int]] = {}
    for stage in (*STAGES, "total"):
        summaries[stage] = summarize([t[stage] for t in result.timings_ms if stage in t])
    hops = [t["total"] - sum(t.get(s, 0.0) for s in STAGES) for t in result.timings_ms if "total" in t]
    summaries["hops"] = summarize(hops)
    return summaries


async def measure(
    base_url: str, questions: list[str], concurrency: int, max_requests: int, max_seconds: float, warmup: int
) -> LoadResult:
    spec = LoadSpec(
        base_url=base_url,
        questions=questions,
        concurrency=concurrency,
        max_requests=max_requests,
        max_seconds=max_seconds,
        warmup=warmup,
    )
    result = await run_load_process(spec)
    if result.errors:
        print(f"  ! {result.errors} failed requests at concurrency {concurrency}: {result.error_samples[:2]}")
    if not result.ok:
        raise RuntimeError(f"no answered question at concurrency {concurrency}: {result.error_samples}")
    return result


def latency_detail(result: LoadResult) -> dict[str, Any]:
    return {
        "requests": result.ok,
        "errors": result.errors,
        "stopped_by": result.stopped_by,
        "elapsed_s": round(result.elapsed_s, 3),
        "per_second": round(result.per_second, 3),
        "e2e_ms": summarize(result.latencies_ms),
        "stages_ms": stage_summaries(result),
    }
