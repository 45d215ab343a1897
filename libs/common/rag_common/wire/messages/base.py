"""Base of every wire message: versioned ``type``, tolerant of unknown fields."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict


def new_id() -> str:
    """A short random id for requests, documents and attempts."""
    return uuid.uuid4().hex


class Message(BaseModel):
    """A message on the wire.

    ``extra="ignore"`` lets an old consumer read a newer producer's message; a breaking change gets
    a new model with a new ``type`` on a new subject instead. Each message narrows ``type`` to its
    own ``Literal``: a message of another kind fails validation instead of being misread.
    """

    model_config = ConfigDict(extra="ignore", frozen=False)

    type: str
