"""Typed, versioned wire messages (pydantic)."""

from rag_common.messages.base import Message, new_id
from rag_common.messages.chunk import ChunkKind, ChunkPayload
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
    Draft,
    Passage,
    Query,
    QueryAnswer,
    QueryDrafted,
    QueryRequested,
    QueryRetrieved,
    QueryRouted,
    Retrieval,
    Route,
    StageMessage,
    Tier,
    Turn,
    Usage,
)

__all__ = [
    "AnswerDelta",
    "AnswerError",
    "ChunkKind",
    "ChunkPayload",
    "DeadLetter",
    "DeleteRequested",
    "DocumentState",
    "DocumentStatus",
    "Draft",
    "IngestRequested",
    "Message",
    "Passage",
    "Query",
    "QueryAnswer",
    "QueryDrafted",
    "QueryRequested",
    "QueryRetrieved",
    "QueryRouted",
    "Retrieval",
    "Route",
    "StageMessage",
    "Tier",
    "Turn",
    "Usage",
    "new_id",
]
