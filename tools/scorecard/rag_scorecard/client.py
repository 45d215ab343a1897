"""The HTTP side of a run: ask questions (bounded retries on 429/503) and wait for readiness."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel

from rag_scorecard.dataset import Item, Question
from rag_scorecard.errors import RunError


class QuestionError(BaseModel):
    """A question whose HTTP call failed; it is left out of every metric and fails the run."""

    id: str
    question: str
    status: int | None  # None: no HTTP response (timeout, connection error)
    message: str


@dataclass(slots=True)
class Outcome:
    """What came back for one question: the answer body or an error, and the client-side latency."""

    question: Question
    body: dict[str, Any] | None
    latency_ms: float
    error: QuestionError | None = None


RETRY_STATUSES = {429, 503}
MAX_RETRIES = 2
MAX_RETRY_WAIT_S = 10.0


def error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", {})
        return f"{error.get('code', 'error')}: {error.get('message', response.text[:200])}"
    except (ValueError, AttributeError):
        return response.text[:200] or response.reason_phrase


def _retry_after(response: httpx.Response, attempt: int) -> float:
    try:
        wait = float(response.headers.get("retry-after", ""))
    except ValueError:
        wait = 0.5 * 2**attempt
    return min(max(wait, 0.0), MAX_RETRY_WAIT_S)


async def ask(
    client: httpx.AsyncClient,
    question: Question,
    collection: str,
    session_id: str | None,
    timeout_s: float,
) -> Outcome:
    """Ask one question; a 429/503 is retried twice (bounded wait), any other failure is recorded."""
    payload: dict[str, Any] = {"question": question.question, "collection": collection}
    if session_id:
        payload["session_id"] = session_id
    for attempt in range(MAX_RETRIES + 1):
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s):  # a hard bound; httpx's own timeout is per read
                response = await client.post("/v1/query", json=payload, timeout=timeout_s)
        except (httpx.TimeoutException, TimeoutError):
            error = QuestionError(
                id=question.id, question=question.question, status=None, message=f"no response within {timeout_s}s"
            )
            return Outcome(question, None, (time.perf_counter() - started) * 1000, error)
        except httpx.HTTPError as exc:
            message = f"{type(exc).__name__}: {exc}"
            error = QuestionError(id=question.id, question=question.question, status=None, message=message)
            return Outcome(question, None, (time.perf_counter() - started) * 1000, error)
        latency_ms = (time.perf_counter() - started) * 1000
        if response.status_code == 200:
            try:
                return Outcome(question, dict(response.json()), latency_ms)
            except (ValueError, TypeError):
                message = f"the 200 response is not a JSON object: {response.text[:200]!r}"
                error = QuestionError(id=question.id, question=question.question, status=200, message=message)
                return Outcome(question, None, latency_ms, error)
        if response.status_code in RETRY_STATUSES and attempt < MAX_RETRIES:
            await asyncio.sleep(_retry_after(response, attempt))
            continue
        break
    error = QuestionError(
        id=question.id, question=question.question, status=response.status_code, message=error_message(response)
    )
    return Outcome(question, None, latency_ms, error)


async def ask_all(
    client: httpx.AsyncClient,
    items: Sequence[Item],
    collection: str,
    *,
    concurrency: int,
    timeout_s: float,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Ask every question with at most ``concurrency`` in flight; conversation turns go in order.

    Each conversation gets one fresh ``session_id`` so a follow-up ("And how much does it cost?")
    is rewritten against its own earlier turns, never against another run's.
    """
    limit = asyncio.Semaphore(concurrency)
    run_id = uuid.uuid4().hex[:8]

    async def run_item(item: Item) -> list[Outcome]:
        session = f"eval-{run_id}-{item.id}"[:128] if item.is_conversation else None
        outcomes = []
        for turn in item.turns:
            async with limit:
                outcome = await ask(client, turn, collection, session, timeout_s)
            if on_done:
                on_done(outcome)
            outcomes.append(outcome)
        return outcomes

    per_item = await asyncio.gather(*(run_item(item) for item in items))
    return [outcome for outcomes in per_item for outcome in outcomes]


async def wait_ready(url: str, timeout_s: float) -> None:
    """Poll ``GET /readyz`` until 200, at most ``timeout_s``; say what is missing if it never is."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    async with httpx.AsyncClient(base_url=url, timeout=5) as client:
        while True:
            try:
                response = await client.get("/readyz")
                if response.status_code == 200:
                    return
                body = (
                    response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
                )
                last = f"HTTP {response.status_code}, missing: {', '.join(body.get('missing', [])) or '?'}"
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if time.monotonic() > deadline:
                raise RunError(f"the system at {url} is not ready after {timeout_s:.0f}s ({last})")
            await asyncio.sleep(0.5)


async def answers_at(url: str) -> bool:
    """Whether anything answers HTTP at ``url`` (ready or not): then it is a running system, not ours to start."""
    try:
        async with httpx.AsyncClient(base_url=url, timeout=3) as client:
            await client.get("/readyz")
        return True
    except httpx.HTTPError:
        return False
