"""Waiting for answers: one subscription per gateway replica, one queue per request in flight."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from pydantic import ValidationError

from rag_common.wire.messages import AnswerDelta, AnswerError, QueryAnswered, QueryRequested

log = logging.getLogger("rag.gateway")

Event = AnswerDelta | QueryAnswered | AnswerError
MODELS: dict[str, type[Event]] = {"delta": AnswerDelta, "final": QueryAnswered, "error": AnswerError}


@dataclass
class Pending:
    """A request in flight: events in arrival order, and the generator attempt we follow."""

    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    attempt: str | None = None
    done: bool = False
    question: QueryRequested | None = None  # as queued: re-submitted if NATS lost it (restart)


class AnswerHub:
    """Routes ``rag.answer.<gateway>.<request>.<kind>`` messages to the request waiting for them.

    A redelivered stage can send a second final answer or a second stream of deltas; the hub
    passes on only the first final and only the deltas of the first generator attempt it saw.
    """

    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}

    def open(self, request_id: str) -> Pending:
        pending = Pending()
        self._pending[request_id] = pending
        return pending

    def close(self, request_id: str) -> None:
        self._pending.pop(request_id, None)

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def unanswered(self) -> list[QueryRequested]:
        """The questions queued by this gateway that have no final answer yet, oldest first."""
        return [p.question for p in list(self._pending.values()) if p.question is not None and not p.done]

    def deliver(self, subject: str, body: bytes) -> None:
        parts = subject.split(".")
        if len(parts) < 2:
            return
        request_id, kind = parts[-2], parts[-1]
        pending = self._pending.get(request_id)
        model = MODELS.get(kind)
        if pending is None or model is None or pending.done:
            return  # late, duplicate or unknown: the client already has its answer
        try:
            event = model.model_validate_json(body)
        except ValidationError as exc:
            log.warning("dropping malformed %s for %s: %s", kind, request_id, exc)
            return
        if isinstance(event, AnswerDelta):
            if pending.attempt is None:
                pending.attempt = event.attempt
            if event.attempt != pending.attempt:
                return
        else:
            pending.done = True
        pending.queue.put_nowait(event)
