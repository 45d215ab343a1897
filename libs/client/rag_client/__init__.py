"""Python client of the RAG gateway: ``RagClient`` (blocking) and ``AsyncRagClient``, plus the ``rag`` CLI."""

from rag_client.client import AsyncRagClient, RagClient
from rag_client.errors import RagError
from rag_common.wire.http_api import Answer, CollectionInfo, DocumentAccepted
from rag_common.wire.messages import DocumentStatus, Flag, Passage

__all__ = [
    "Answer",
    "AsyncRagClient",
    "CollectionInfo",
    "DocumentAccepted",
    "DocumentStatus",
    "Flag",
    "Passage",
    "RagClient",
    "RagError",
]
