"""Base of every wire message: versioned ``type``, tolerant of unknown fields."""

from __future__ import annotations

import time
import uuid

from pydantic import BaseModel, ConfigDict, Field


def new_id() -> str:
    """A short random id for requests, documents and attempts."""
    return uuid.uuid4().hex


class Message(BaseModel):
    """A message on the wire.

    ``extra="ignore"`` lets an old consumer read a newer producer's message; a breaking change gets
    a new model with a new ``type`` on a new subject instead.
    """

    model_config = ConfigDict(extra="ignore", frozen=False)

    type: str


class Timed(Message):
    """A message that collects how long each stage took, in milliseconds."""

    request_id: str
    timings_ms: dict[str, float] = Field(default_factory=dict)
    started_at: float = Field(default_factory=time.time)
