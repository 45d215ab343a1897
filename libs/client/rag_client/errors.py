"""An error answer of the gateway's API, and when and how long a client waits to try again.

A request that met 429 or a 5xx (or no connection) is tried again, waiting what the server's
``Retry-After`` asks (capped) or else an exponential back-off with jitter.
"""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

import httpx
from tenacity import RetryCallState, wait_exponential_jitter

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class RagError(Exception):
    """An error answer of the API, with its status, code, message and request id."""

    def __init__(
        self, status: int, code: str, message: str, request_id: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.request_id, self.retry_after = request_id, retry_after

    @property
    def retryable(self) -> bool:
        """Whether the same request may work when tried again (rate limited, or a gateway busy or restarting)."""
        return self.status in RETRY_STATUSES

    def about(self, source: str) -> RagError:
        """The same error, its message naming the file it is about (a folder upload)."""
        return RagError(self.status, self.code, f"{source}: {self.message}", self.request_id, self.retry_after)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


def error_from(response: httpx.Response) -> RagError:
    """The API's error (either shape: ``{"error": {"code", "message"}}``, OpenAI's too) as a ``RagError``."""
    code, message, rid = "error", response.text[:300] or response.reason_phrase, ""
    try:
        detail = response.json().get("error", {})
        code = str(detail.get("code") or detail.get("type") or code)
        message = str(detail.get("message") or message)
        rid = str(detail.get("request_id") or "")
    except (ValueError, AttributeError):
        pass
    rid = rid or response.headers.get("x-request-id", "")
    return RagError(response.status_code, code, message, rid, retry_after_seconds(response.headers.get("retry-after")))


def worth_retrying(exc: BaseException) -> bool:
    """Whether a request that raised ``exc`` is tried again: a retryable status, or no connection."""
    return (isinstance(exc, RagError) and exc.retryable) or isinstance(exc, httpx.TransportError)


class RetryAfterOrBackoff:
    """tenacity wait: the server's ``Retry-After`` when it sent one, else exponential back-off with jitter."""

    def __init__(self, max_wait_s: float) -> None:
        self.max_wait_s = max_wait_s
        self.backoff = wait_exponential_jitter(initial=0.5, max=max_wait_s, jitter=0.5)

    def __call__(self, state: RetryCallState) -> float:
        """Seconds to wait before the next attempt."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RagError) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_wait_s)
        return float(self.backoff(state))
