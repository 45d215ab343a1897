"""Per-key token buckets: a key may burst up to its per-minute limit, then refills steadily.

The buckets live in this gateway process: with N gateway replicas behind a load balancer a key
may make up to N times its limit. That is the documented trade-off for not putting a NATS
round trip on every request.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float
    per_min: int


class RateLimiter:
    """``take(key, per_min)`` spends one token; it returns 0 when allowed, else seconds to wait."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000) -> None:
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, _Bucket] = {}

    def take(self, key: str, per_min: int) -> int:
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None or bucket.per_min != per_min:  # new key, or its limit was changed
            if len(self._buckets) >= self.max_keys:
                self._forget_full(now)
            bucket = self._buckets[key] = _Bucket(tokens=float(per_min), updated=now, per_min=per_min)
        rate = per_min / 60.0
        bucket.tokens = min(float(per_min), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0
        return max(1, math.ceil((1.0 - bucket.tokens) / rate))

    def _forget_full(self, now: float) -> None:
        """Drop buckets that have refilled completely: forgetting them changes nothing."""
        for key, b in list(self._buckets.items()):
            if b.tokens + (now - b.updated) * b.per_min / 60.0 >= b.per_min:
                del self._buckets[key]
        if len(self._buckets) >= self.max_keys:  # still full: forget the oldest
            oldest = min(self._buckets, key=lambda k: self._buckets[k].updated)
            del self._buckets[oldest]
