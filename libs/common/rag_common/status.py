"""Document status records in a JetStream key-value bucket (shared by the gateway and ingest)."""

from __future__ import annotations

from nats.js.errors import KeyNotFoundError, NoKeysError
from nats.js.kv import KeyValue

from rag_common.messages import DocumentStatus


class StatusStore:
    """Read and write ``DocumentStatus`` records, one key per document id."""

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def get(self, document_id: str) -> DocumentStatus | None:
        try:
            entry = await self.kv.get(document_id)
        except KeyNotFoundError:
            return None
        if entry.value is None:
            return None
        return DocumentStatus.model_validate_json(entry.value)

    async def put(self, status: DocumentStatus) -> None:
        await self.kv.put(status.document_id, status.model_dump_json().encode())

    async def update(self, document_id: str, **changes: object) -> DocumentStatus | None:
        current = await self.get(document_id)
        if current is None:
            return None
        updated = current.model_copy(update=changes)
        await self.put(updated)
        return updated

    async def delete(self, document_id: str) -> None:
        await self.kv.delete(document_id)

    async def list(self, collection: str | None = None) -> list[DocumentStatus]:
        try:
            keys = await self.kv.keys()
        except NoKeysError:
            return []
        records = [r for r in [await self.get(k) for k in keys] if r is not None]
        records = [r for r in records if collection is None or r.collection == collection]
        return sorted(records, key=lambda r: (r.collection, r.source))
