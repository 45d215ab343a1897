"""How much each request loop of ``make bench`` may do: the full run's bounds and ``--quick``'s."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks import scale


@dataclass(frozen=True)
class Bounds:
    """How much each request loop may do: a count and a time limit, whichever comes first."""

    target_chunks: int
    questions: int
    latency_c1: tuple[int, float]
    latency_c8: tuple[int, float]
    retrieval_alone: tuple[int, float]  # repeats of the question list, seconds
    overhead_repeats: int
    overhead_seconds: float
    throughput_c8: tuple[int, float]
    throughput_c32: tuple[int, float]
    warmup: int
    scale_small: int
    scale_large: int
    scale_large_local: int
    scale_count: int
    scale_seconds: float
    cache_questions: int  # asked twice per run (a full answer, then the cache's)
    cache_seconds: float  # each pass of them


FULL = Bounds(
    target_chunks=500,
    questions=30,
    latency_c1=(90, 15.0),
    latency_c8=(160, 10.0),
    retrieval_alone=(3, 10.0),
    overhead_repeats=1,
    overhead_seconds=20.0,
    throughput_c8=(240, 6.0),
    throughput_c32=(320, 6.0),
    warmup=5,
    scale_small=scale.SMALL,
    scale_large=scale.LARGE,
    scale_large_local=scale.LOCAL_LARGE,
    scale_count=40,
    scale_seconds=20.0,
    cache_questions=80,
    cache_seconds=60.0,
)
QUICK = Bounds(
    target_chunks=100,
    questions=8,
    latency_c1=(20, 5.0),
    latency_c8=(40, 5.0),
    retrieval_alone=(2, 3.0),
    overhead_repeats=1,
    overhead_seconds=10.0,
    throughput_c8=(60, 4.0),
    throughput_c32=(100, 4.0),
    warmup=2,
    scale_small=300,
    scale_large=1200,
    scale_large_local=1200,
    scale_count=10,
    scale_seconds=5.0,
    cache_questions=20,
    cache_seconds=20.0,
)
