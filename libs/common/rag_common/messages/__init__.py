"""Typed, versioned wire messages (pydantic)."""

from rag_common.messages.base import Message, Timed, new_id
from rag_common.messages.ingest import (
    DeadLetter,
    DeleteRequested,
    DocumentState,
    DocumentStatus,
    IngestRequested,
)
from rag_common.messages.query import (
    AnswerDelta,
    AnswerError,
    Passage,
    QueryAnswer,
    QueryDrafted,
    QueryRequested,
    QueryRetrieved,
    QueryRouted,
    Route,
    Tier,
    Turn,
    Usage,
    advance,
)

__all__ = [
    "AnswerDelta",
    "AnswerError",
    "DeadLetter",
    "DeleteRequested",
    "DocumentState",
    "DocumentStatus",
    "IngestRequested",
    "Message",
    "Passage",
    "QueryAnswer",
    "QueryDrafted",
    "QueryRequested",
    "QueryRetrieved",
    "QueryRouted",
    "Route",
    "Tier",
    "Timed",
    "Turn",
    "Usage",
    "advance",
    "new_id",
]
