"""The tests' one polling helper: returns as soon as the condition holds, fails at its deadline."""

from __future__ import annotations

import time

import pytest

from tests.support.polling import eventually

pytestmark = pytest.mark.unit


async def test_returns_the_first_value_that_satisfies_the_condition() -> None:
    seen: list[int] = []

    async def probe() -> int:
        seen.append(len(seen))
        return seen[-1]

    assert await eventually(probe, lambda n: n >= 3, timeout_s=5, what="a count", interval_s=0) == 3
    assert seen == [0, 1, 2, 3]


async def test_fails_at_the_deadline_naming_what_it_waited_for_and_the_last_value() -> None:
    async def probe() -> str:
        return "processing"

    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"document indexed: not within 0.2 s \(last seen: processing\)"):
        await eventually(probe, lambda s: s == "indexed", timeout_s=0.2, what="document indexed", interval_s=0.01)
    assert 0.2 <= time.monotonic() - started < 2
