"""Messages and records of the ingest path."""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rag_common.wire.messages.base import Message
from rag_common.wire.names import Collection

DocumentState = Literal["queued", "processing", "indexed", "unchanged", "failed", "deleting"]


class IngestRequested(Message):
    """Index one uploaded document; its bytes wait in the object store under ``object_name``."""

    type: Literal["rag.ingest.requested.v1"] = "rag.ingest.requested.v1"
    request_id: str
    document_id: str
    collection: Collection = "default"
    source: str
    object_name: str
    content_hash: str
    size: int
    content_type: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)


class DeleteRequested(Message):
    """Remove one document: its chunks, its stored bytes and its status."""

    type: Literal["rag.ingest.delete.v1"] = "rag.ingest.delete.v1"
    request_id: str
    document_id: str
    collection: Collection = "default"


class DocumentStatus(BaseModel):
    """What ``GET /v1/documents/{id}`` shows; kept in the status key-value bucket."""

    model_config = ConfigDict(extra="ignore")

    document_id: str
    collection: Collection
    source: str
    status: DocumentState
    content_hash: str = ""
    size: int = 0
    chunks: int = 0
    error: str | None = None
    request_id: str = ""
    metadata: dict[str, str] = Field(default_factory=dict)
    hidden_text: dict[str, int] = Field(
        default_factory=dict,
        description="text left out of the index because a reader of the file does not see it (white or tiny "
        "text, hidden runs or elements, boxes off the slide or screen, invisible PDF text), counted per reason",
    )
    updated_at: float = Field(default_factory=time.time)


class DeadLetter(Message):
    """A message that could not be processed, with the reason; replayable from ``payload``."""

    type: Literal["rag.dlq.v1"] = "rag.dlq.v1"
    subject: str
    error: str
    payload: str
    request_id: str = ""
    deliveries: int = 1
    failed_at: float = Field(default_factory=time.time)
