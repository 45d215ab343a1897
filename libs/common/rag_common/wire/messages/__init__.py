"""Typed, versioned wire messages (pydantic)."""

from rag_common.wire.messages.audit import AUDIT_ACTIONS, AuditAction, AuditEvent
from rag_common.wire.messages.base import Message, new_id
from rag_common.wire.messages.chunk import ChunkKind, ChunkPayload
from rag_common.wire.messages.ingest import DeadLetter, DeleteRequested, DocumentState, DocumentStatus, IngestRequested
from rag_common.wire.messages.query import (
    AnswerDelta,
    AnswerError,
    Draft,
    DraftedStage,
    Evaluation,
    Passage,
    Query,
    QueryAnswered,
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
    "AUDIT_ACTIONS",
    "AnswerDelta",
    "AnswerError",
    "AuditAction",
    "AuditEvent",
    "ChunkKind",
    "ChunkPayload",
    "DeadLetter",
    "DeleteRequested",
    "DocumentState",
    "DocumentStatus",
    "Draft",
    "DraftedStage",
    "Evaluation",
    "IngestRequested",
    "Message",
    "Passage",
    "Query",
    "QueryAnswered",
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
