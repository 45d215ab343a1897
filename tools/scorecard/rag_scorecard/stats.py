"""Percentiles, medians and sample summaries, shared by the evaluation reports and the benchmarks (pure; no numpy).

Percentiles use linear interpolation between closest ranks (numpy's default ``linear`` method,
Hyndman & Fan type 7), so p50 of an even-sized sample is the mean of the two middle values, and p95
of a small set (50 questions) does not jump to the single slowest one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


def percentile(values: Iterable[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of ``values``; raises ValueError on an empty sample."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within 0..100, got {p}")
    ordered = sorted(float(v) for v in values)
    if not ordered:
        raise ValueError("percentile of an empty sample")
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Iterable[float]) -> float:
    return percentile(values, 50)


def summarize(values: Sequence[float], digits: int = 3) -> dict[str, float | int]:
    """Count, p50, p95, mean, min and max of a sample, rounded (an empty sample gives only ``n``)."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), digits),
        "p95": round(percentile(values, 95), digits),
        "mean": round(sum(values) / len(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
    }


def paired_differences(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """``a[i] - b[i]`` for samples measured in pairs (same input, same moment)."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    return [x - y for x, y in zip(a, b, strict=True)]


@dataclass(frozen=True, slots=True)
class Percentiles:
    """Median and tail of one latency distribution, in milliseconds."""

    p50: float | None
    p95: float | None
    count: int


def percentiles(values: Sequence[float]) -> Percentiles:
    """p50 and p95 of a sample; both None when it is empty (no answer went through that stage)."""
    if not values:
        return Percentiles(p50=None, p95=None, count=0)
    return Percentiles(p50=percentile(values, 50), p95=percentile(values, 95), count=len(values))


def stage_percentiles(timings: Sequence[Mapping[str, float]]) -> dict[str, Percentiles]:
    """p50/p95 per stage over the answers that went through it (greetings skip retrieval)."""
    stages: dict[str, list[float]] = {}
    for timing in timings:
        for stage, ms in timing.items():
            stages.setdefault(stage, []).append(float(ms))
    return {stage: percentiles(values) for stage, values in sorted(stages.items())}
