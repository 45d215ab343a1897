"""One way for tests to wait: poll a probe until a condition holds, with a deadline.

Tests wait on observable state (an HTTP status, a metric, a span), never on a sleep; every wait
has a deadline and, when it expires, says what it waited for and what it saw last.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.05,
) -> T:
    """Call ``probe`` until ``done(value)``; return that value, or fail after ``timeout_s`` naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = await probe()
        if done(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout_s:g} s (last seen: {str(value)[:300]})")
        await asyncio.sleep(interval_s)
