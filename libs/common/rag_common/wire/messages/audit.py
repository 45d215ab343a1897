"""The audit log's record: who did what to keys, documents and profiles, and which requests were refused."""

from __future__ import annotations

import time
from typing import Literal

from pydantic import Field

from rag_common.wire.messages.base import Message

AuditAction = Literal[
    "key_created",
    "key_revoked",
    "document_uploaded",
    "document_deleted",
    "profile_set",
    "profile_deleted",
    "request_refused",
]
AUDIT_ACTIONS: tuple[AuditAction, ...] = (
    "key_created",
    "key_revoked",
    "document_uploaded",
    "document_deleted",
    "profile_set",
    "profile_deleted",
    "request_refused",
)


class AuditEvent(Message):
    """One line of the audit log (stream ``RAG_AUDIT``, subject ``rag.audit.<action>.<actor>``).

    ``actor`` is the caller's key id, ``admin``, ``local`` (authentication off) or ``anonymous``
    (no valid key). ``status`` is the HTTP status a refused request got: 401, 403, 429, or 404
    for a request refused as "not found" so that it does not tell whether the thing exists.
    Never a key, a secret or a document's content.
    """

    type: Literal["rag.audit.v1"] = "rag.audit.v1"
    action: AuditAction
    actor: str
    actor_name: str | None = None  # the key's name, as the admin gave it
    tenant: str | None = None
    at: float = Field(default_factory=time.time)
    request_id: str | None = None
    method: str | None = None
    path: str | None = None
    status: int | None = None
    reason: str | None = None
    collection: str | None = None
    target: str | None = None  # the key id, document id or session id acted on
    details: dict[str, str] = Field(default_factory=dict)
