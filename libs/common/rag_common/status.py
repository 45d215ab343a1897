"""Document status records in a JetStream key-value bucket (shared by the gateway and ingest)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError, NoKeysError
from nats.js.kv import KeyValue

from rag_common.messages import DocumentStatus

CAS_ATTEMPTS = 50


class StatusConflict(Exception):
    """Too many writers changed a document's status at once; the caller may try again later."""


class StatusStore:
    """Read and write ``DocumentStatus`` records, one key per document id.

    Concurrent writers (several uploads of one file, ingest workers) use ``replace`` and
    ``transition``: compare-and-set on the key's revision, so no writer overwrites a record it
    has not seen.
    """

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

    async def entry(self, document_id: str) -> tuple[DocumentStatus | None, int]:
        """The record and its revision (0 when the key never existed; a deleted key keeps its revision)."""
        try:
            entry = await self.kv.get(document_id)
        except KeyNotFoundError as exc:
            revision = getattr(exc.entry, "revision", None) if exc.entry is not None else None
            return None, int(revision or 0)
        record = DocumentStatus.model_validate_json(entry.value) if entry.value else None
        return record, int(entry.revision or 0)

    async def put_if(self, status: DocumentStatus, revision: int) -> bool:
        """Write ``status`` only if the key is still at ``revision``; False if someone wrote first."""
        try:
            await self.kv.update(status.document_id, status.model_dump_json().encode(), last=revision)
        except KeyWrongLastSequenceError:
            return False
        return True

    async def transition(
        self, document_id: str, allowed: Callable[[DocumentStatus], bool], **changes: object
    ) -> DocumentStatus | None:
        """Apply ``changes`` if the current record passes ``allowed``, atomically; None if it does not."""
        for _ in range(CAS_ATTEMPTS):
            current, revision = await self.entry(document_id)
            if current is None or not allowed(current):
                return None
            updated = current.model_copy(update=changes)
            if await self.put_if(updated, revision):
                return updated
        raise StatusConflict(f"status of {document_id} changed {CAS_ATTEMPTS} times while updating it")

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

    async def keys(self) -> list[str]:
        """Every key with a record, from the bucket's stream state.

        Not ``KeyValue.keys()``: its watcher can signal "no more keys" before delivering them all
        while the bucket is being written (measured: 1 of 200 listings of a 20-key bucket came back
        incomplete under concurrent writes; a document list then missed documents).
        """
        kv: Any = self.kv
        js, stream, prefix = getattr(kv, "_js", None), getattr(kv, "_stream", None), getattr(kv, "_pre", None)
        if js is None or stream is None or prefix is None:  # not a nats-py bucket: its own listing
            try:
                return list(await self.kv.keys())
            except NoKeysError:
                return []
        info = await js.stream_info(stream, subjects_filter=f"{prefix}>")
        return sorted(subject[len(prefix) :] for subject in (info.state.subjects or {}))

    async def list(self, collection: str | None = None) -> list[DocumentStatus]:
        keys = await self.keys()  # deleted keys are among them; get() returns None for those
        records = [r for r in [await self.get(k) for k in keys] if r is not None]
        records = [r for r in records if collection is None or r.collection == collection]
        return sorted(records, key=lambda r: (r.collection, r.source))
