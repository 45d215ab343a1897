"""Keep every message under the NATS server's payload limit (``max_payload``, 1 MiB by default).

A message over the limit is refused by the client (``MaxPayloadError``) and would fail its stage
on every redelivery. Passage texts are what can grow (a stage carries several chunks), so they are
shortened first; a message that still does not fit is a clear permanent error for the one request,
never a broken collection.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from rag_common.transport.consuming import PermanentError
from rag_common.wire.messages import Passage

M = TypeVar("M", bound=BaseModel)

# Headers (trace context, Nats-Msg-Id) travel in the same frame as the payload.
HEADER_ROOM = 16 * 1024
# Passage text lengths tried, longest first, until the message fits.
_TEXT_CAPS = (8000, 4000, 2000, 1000, 500, 200, 0)


class PayloadTooLarge(PermanentError):
    """A message that does not fit the server's payload limit even with its passages cut: no retry helps."""

    def __init__(self, message: str) -> None:
        super().__init__("payload_too_large", message, 413)


DEFAULT_MAX_PAYLOAD = 1024 * 1024


def payload_limit(broker: Any) -> int:
    """The byte budget for one message's body: the server's ``max_payload`` less header room."""
    try:
        announced = broker.connection.max_payload
    except Exception:  # not connected (yet), or an in-memory test broker
        announced = None
    max_payload = announced if isinstance(announced, int) and announced > 0 else DEFAULT_MAX_PAYLOAD
    return max(1024, max_payload - HEADER_ROOM)


def encoded_size(message: BaseModel) -> int:
    """The message's size as published (JSON, UTF-8)."""
    return len(message.model_dump_json().encode("utf-8"))


def fit_payload(message: M, limit: int) -> M:
    """``message`` if it fits ``limit`` bytes, else a copy with passage texts cut to fit.

    A cut passage keeps its citation fields (source, section, page); its ``text`` ends with
    "…" so a reader sees it was shortened. Raises ``PayloadTooLarge`` if nothing makes it fit.
    """
    size = encoded_size(message)
    if size <= limit:
        return message
    for cap in _TEXT_CAPS:
        trimmed = _with_passages_cut(message, cap)
        if trimmed is None:
            break
        if encoded_size(trimmed) <= limit:
            return trimmed
    raise PayloadTooLarge(
        f"{type(message).__name__} is {size} bytes, over the {limit}-byte message limit even with passages cut"
    )


def fitted_json(message: BaseModel, limit: int) -> bytes:
    """``message`` as JSON under ``limit`` bytes, encoded once when it fits (the usual case)."""
    body = message.model_dump_json().encode("utf-8")
    return body if len(body) <= limit else fit_payload(message, limit).model_dump_json().encode("utf-8")


def _with_passages_cut(message: M, cap: int) -> M | None:
    """A copy with every passage list's texts cut to ``cap`` characters; None if it has none.

    Nested parts too (a stage message's ``retrieval``).
    """
    update: dict[str, Any] = {}
    for name in type(message).model_fields:
        value = getattr(message, name)
        if isinstance(value, list) and value and all(isinstance(item, Passage) for item in value):
            update[name] = [_cut(passage, cap) for passage in value]
        elif isinstance(value, BaseModel) and (part := _with_passages_cut(value, cap)) is not None:
            update[name] = part
    return message.model_copy(update=update) if update else None


def _cut(passage: Passage, cap: int) -> Passage:
    if len(passage.text) <= cap:
        return passage
    text = passage.text[:cap] + "…" if cap else ""
    spans = [(start, min(end, cap)) for start, end in passage.injection_spans if start < cap]
    return passage.model_copy(update={"text": text, "injection_spans": spans})
