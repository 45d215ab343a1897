"""The JetStream buckets: uploaded bytes (object store), document status and sessions (key-value)."""

from __future__ import annotations

from typing import Any

from faststream.nats import NatsBroker
from nats.js.api import StorageType
from prometheus_client import Counter

from rag_common.config.settings import ServiceSettings
from rag_common.store.docindex import DocumentIndex
from rag_common.wire import subjects


async def open_buckets(broker: NatsBroker, settings: ServiceSettings) -> tuple[Any, Any]:
    """The document object store and the status key-value bucket (declared if missing)."""
    objects = await broker.object_storage(
        subjects.DOCUMENTS_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas
    )
    status = await broker.key_value(
        subjects.DOC_STATUS_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas, history=5
    )
    return objects, status


async def open_document_index(
    broker: NatsBroker, settings: ServiceSettings, invalidations: Counter | None = None
) -> DocumentIndex:
    """The per-collection document index behind listings and index versions, declared if missing.

    ``invalidations`` counts the versions this process moves.
    """
    kv = await broker.key_value(
        subjects.DOC_INDEX_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas, history=1
    )
    return DocumentIndex(broker.connection.jetstream(), kv, invalidations=invalidations)


async def open_sessions_bucket(broker: NatsBroker, settings: ServiceSettings, *, ttl_s: float) -> Any:
    """The conversation-memory bucket; its TTL forgets idle conversations (declared if missing)."""
    return await broker.key_value(
        subjects.SESSIONS_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas, history=1, ttl=ttl_s
    )


async def open_assessments_bucket(broker: NatsBroker, settings: ServiceSettings) -> Any:
    """The assessment jobs bucket: state, progress and result per id, declared if missing.

    Kept a week: a teacher comes back for a paper, and nothing else holds it.
    """
    return await broker.key_value(
        subjects.ASSESSMENTS_BUCKET,
        storage=StorageType.FILE,
        replicas=settings.js_replicas,
        history=1,
        ttl=7 * 24 * 3600.0,
    )
