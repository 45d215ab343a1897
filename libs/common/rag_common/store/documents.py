"""Documents: the one owner of document ids, object names, status transitions and the unchanged rule.

The gateway (uploads, deletes) and ingest (indexing) both change a document; everything they must
agree on lives here so neither builds a name or judges a version on its own:

- **id**: the same source path in the same collection is the same document (``document_id_for``).
- **object name**: one object per version, ``<collection>/<document id>/<content hash>``, so
  concurrent uploads of one name never overwrite bytes being read (``object_name``).
- **status transitions**: every write to the status key is a compare-and-set on the key-value
  revision (``StatusStore``): an upload is accepted, a version is processed, indexed or failed, a
  document is deleted, and no writer overwrites a record it has not seen.
- **unchanged**: a version is unchanged when the index already holds these bytes under the current
  index settings. Ingest decides it from the vector store (``indexed_outcome``), the only record of
  what is indexed, and writes it to the status; the gateway reads that status
  (``upload_unchanged``) only to skip storing bytes that are indexed already.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal

from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NoKeysError
from nats.js.kv import KeyValue

from rag_common.store.docindex import SETTLE_S, WRONG_LAST_SEQUENCE, DocumentIndex
from rag_common.wire.messages import DocumentStatus, IngestRequested

CAS_ATTEMPTS = 50
UPLOAD_ATTEMPTS = 20
_DOC_NS = uuid.UUID("3b4f8a52-98c7-4bd5-8f0e-1b6a9c5d2e71")
INDEXED_STATES = ("indexed", "unchanged")


def document_id_for(collection: str, source: str) -> str:
    """The same file name in the same collection is the same document: re-uploads replace it."""
    return uuid.uuid5(_DOC_NS, f"{collection}/{source}").hex


def content_hash(data: bytes) -> str:
    """The version of a document's bytes."""
    return hashlib.sha256(data).hexdigest()


def object_name(collection: str, document_id: str, version_hash: str) -> str:
    """Where one version's bytes wait in the object store."""
    return f"{collection}/{document_id}/{version_hash}"


def legacy_object_name(collection: str, document_id: str) -> str:
    """The name older releases stored every version under (one object per document)."""
    return f"{collection}/{document_id}"


def stored_version(version_hash: str, settings_digest: str) -> str:
    """The version the index stores: the bytes' hash plus a digest of what shapes chunks and vectors."""
    return f"{version_hash}:{settings_digest}"


def hash_of_stored_version(version: str | None) -> str:
    """The content hash part of a stored version ("" when nothing is indexed)."""
    return (version or "").partition(":")[0]


def upload_unchanged(previous: DocumentStatus | None, version_hash: str) -> bool:
    """Whether an upload's bytes are the ones ingest last found indexed: then they are not stored again."""
    return bool(previous and previous.content_hash == version_hash and previous.status in INDEXED_STATES)


def indexed_outcome(indexed_by: str | None, request: IngestRequested) -> Literal["indexed", "unchanged"]:
    """The status of a version the index already holds (``indexed_by``: the upload that indexed it).

    Indexed by this very request, whose status write was lost (e.g. NATS went away): "indexed";
    by an earlier upload of the same bytes: "unchanged".
    """
    return "indexed" if indexed_by == request.request_id else "unchanged"


class StatusConflict(Exception):
    """Too many writers changed a document's status at once; the caller may try again later."""


class StatusStore:
    """Read and write ``DocumentStatus`` records, one key per document id.

    Concurrent writers (several uploads of one file, ingest workers) use ``replace`` and
    ``transition``: compare-and-set on the key's revision, so no writer overwrites a record it
    has not seen.
    """

    def __init__(self, kv: KeyValue, index: DocumentIndex | None = None) -> None:
        self.kv = kv
        self.index = index  # None: listings read every record (in-memory stand-ins, tests)

    async def get(self, document_id: str) -> DocumentStatus | None:
        """The document's status record, or None when there is none (never uploaded, or deleted)."""
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
        swapped = await self._swap(document_id, allowed, **changes)
        return swapped[1] if swapped else None

    async def _swap(
        self, document_id: str, allowed: Callable[[DocumentStatus], bool], **changes: object
    ) -> tuple[DocumentStatus, DocumentStatus] | None:
        """``transition``, returning the record before and after the change."""
        for _ in range(CAS_ATTEMPTS):
            current, revision = await self.entry(document_id)
            if current is None or not allowed(current):
                return None
            updated = current.model_copy(update=changes)
            if await self.put_if(updated, revision):
                return current, updated
        raise StatusConflict(f"status of {document_id} changed {CAS_ATTEMPTS} times while updating it")

    async def undo(self, before: DocumentStatus | None, after: DocumentStatus) -> bool:
        """Put ``before`` back (no record when None) where ``after`` was written; False if someone wrote since.

        An upload or delete whose message could not be queued leaves the status as it found it, not
        "queued" or "deleting" for a message that never left.
        """
        current, revision = await self.entry(after.document_id)
        if current is None or (current.request_id, current.status) != (after.request_id, after.status):
            return False
        if before is not None:
            return await self.put_if(before, revision)
        try:
            await self.kv.delete(after.document_id, last=revision)
        except APIError as exc:
            if exc.err_code in WRONG_LAST_SEQUENCE:
                return False
            raise
        await self._unindex(after.collection, after.document_id)
        return True

    async def _unindex(self, collection: str, document_id: str) -> None:
        """Take a document whose record was just removed out of the index (docindex: the record leads)."""
        if self.index is None:
            return

        async def recorded() -> bool:
            record = await self.get(document_id)
            return record is not None and record.collection == collection

        await self.index.remove(collection, document_id, recorded)

    async def changed(self, collection: str) -> None:
        """Record that the collection's documents changed, which retires its cached answers.

        A new index version (``DocumentIndex.touch``).
        """
        if self.index is not None:
            await self.index.touch(collection)

    # --- the transitions --------------------------------------------------------------------

    async def accept_upload(
        self,
        *,
        document_id: str,
        collection: str,
        source: str,
        version_hash: str,
        size: int,
        request_id: str,
        metadata: dict[str, str],
    ) -> tuple[DocumentStatus | None, DocumentStatus]:
        """Queue a version: of concurrent uploads of one name, the one whose record lands last is accepted.

        Returns the record it replaced (None for a new document) and the accepted one (for ``undo``).
        """
        for _ in range(UPLOAD_ATTEMPTS):
            previous, revision = await self.entry(document_id)
            status = DocumentStatus(
                document_id=document_id,
                collection=collection,
                source=source,
                status="queued",
                content_hash=version_hash,
                size=size,
                chunks=previous.chunks if previous else 0,
                request_id=request_id,
                metadata=metadata,
            )
            if await self.put_if(status, revision):
                if self.index is not None:
                    await self.index.add(collection, document_id)
                return previous, status
        raise StatusConflict(f"status of {document_id} changed {UPLOAD_ATTEMPTS} times while accepting an upload")

    async def start_processing(self, request: IngestRequested) -> bool:
        """Claim the version a message names; False when a newer upload or a delete replaced it."""
        return (
            await self.transition(request.document_id, _is_current(request), status="processing", error=None)
            is not None
        )

    async def finish(
        self,
        request: IngestRequested,
        state: Literal["indexed", "unchanged"],
        chunks: int,
        hidden_text: dict[str, int] | None = None,
    ) -> DocumentStatus | None:
        """Record that the index holds the version, and what its parser left out as hidden text.

        None when a newer upload replaced it meanwhile.
        """
        return await self.transition(
            request.document_id,
            _is_current(request),
            status=state,
            chunks=chunks,
            error=None,
            hidden_text=dict(hidden_text or {}),
        )

    async def fail(self, document_id: str, version_hash: str | None, error: str) -> DocumentStatus | None:
        """Mark a version failed; a superseded version's failure does not mark the newer one, nor a delete under way.

        ``version_hash`` None (a failed delete message) marks whatever the record holds.
        """

        def same_version(record: DocumentStatus) -> bool:
            return version_hash is None or (record.content_hash == version_hash and record.status != "deleting")

        return await self.transition(document_id, same_version, status="failed", error=error)

    async def start_delete(self, document_id: str, request_id: str) -> tuple[DocumentStatus, DocumentStatus] | None:
        """Mark a document as being deleted: the record before and after (for ``undo``); None when it has none."""
        return await self._swap(document_id, lambda _: True, status="deleting", request_id=request_id)

    async def forget(self, document_id: str) -> DocumentStatus | None:
        """Remove the record of a document being deleted, and return it.

        Only a record still ``deleting`` is removed: an upload accepted after the delete request
        keeps its record, so its ingest goes ahead instead of finding no status and skipping.
        """
        for _ in range(CAS_ATTEMPTS):
            current, revision = await self.entry(document_id)
            if current is None or current.status != "deleting":
                return None
            try:
                await self.kv.delete(document_id, last=revision)
            except APIError as exc:
                if exc.err_code in WRONG_LAST_SEQUENCE:
                    continue
                raise
            await self._unindex(current.collection, current.document_id)
            return current
        raise StatusConflict(f"status of {document_id} changed {CAS_ATTEMPTS} times while deleting it")

    # --- reading ------------------------------------------------------------------------------

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
        """The records of one collection's documents (of all, with None), by collection and source.

        With the index, only the listed collection's records are read; without it, every key the
        bucket holds, deleted ones included.
        """
        if self.index is not None:
            if collection is not None:
                keys = await self.index.documents(collection)
            else:
                keys = [document_id for _, document_id in await self.index.all_documents()]
            found = await asyncio.gather(*(self.get(k) for k in keys))
        else:
            keys = await self.keys()  # deleted keys are among them; get() returns None for those
            found = [await self.get(k) for k in keys]
        records = [r for r in found if r is not None and (collection is None or r.collection == collection)]
        return sorted(records, key=lambda r: (r.collection, r.source))

    async def page(
        self,
        collection: str | None = None,
        *,
        readable: Callable[[str], bool] | None = None,
        after: tuple[str, str] | None = None,
        limit: int = 100,
    ) -> tuple[builtins.list[DocumentStatus], tuple[str, str] | None]:
        """One page of records, by (collection, document id), and the next page's cursor (None at the end).

        Up to ``limit`` records of the ``readable`` collections (of one, with ``collection``) after ``after``.

        With the index, only the page's records are read: a page costs the same in a collection
        of ten documents as in one of a hundred thousand (besides the index's key listing).
        """
        if self.index is not None:
            if collection is not None:
                keys = [(collection, k) for k in await self.index.documents(collection)]
            else:
                keys = await self.index.all_documents()
        else:
            keys = [(r.collection, r.document_id) for r in await self.list(collection)]
        pending = sorted(k for k in keys if (readable is None or readable(k[0])) and (after is None or k > after))
        records: builtins.list[DocumentStatus] = []
        while pending and len(records) < limit:
            batch, pending = pending[: limit - len(records)], pending[limit - len(records) :]
            found = await asyncio.gather(*(self.get(document_id) for _, document_id in batch))
            records += [r for (name, _), r in zip(batch, found, strict=True) if r is not None and r.collection == name]
        last = (records[-1].collection, records[-1].document_id) if records and pending else None
        return records, last

    async def collection_counts(self) -> dict[str, int]:
        """Documents per collection, for the collections holding any.

        With the index: one small read per collection, however many documents they hold.
        """
        if self.index is not None:
            return await self.index.counts()
        return dict(Counter(r.collection for r in await self.list()))

    async def collection_names(self) -> set[str]:
        """The collections holding documents."""
        if self.index is not None:
            return set(await self.index.collections())
        return {r.collection for r in await self.list()}

    async def repair_index(self, settle_s: float = SETTLE_S) -> tuple[int, int, tuple[str, ...]]:
        """Bring the index in line with the records, then its counts in line with its keys.

        A full read of both: ingest's periodic sweep, and the first start after an upgrade, when
        the index is empty; the counts through ``DocumentIndex.recount``. Returns the documents
        added, those removed and the collections whose count was corrected.
        """
        if self.index is None:
            return 0, 0, ()
        indexed = set(await self.index.all_documents())
        added = removed = 0
        for key in await self.keys():
            record = await self.get(key)
            # every record, not only those missing from the listing: a key a stopped remover left
            # as a delete marker is listed, yet must be written again
            if record is not None and await self.index.add(record.collection, record.document_id):
                added += 1
        for collection, document_id in indexed:
            record = await self.get(document_id)
            if record is None or record.collection != collection:
                await self._unindex(collection, document_id)
                removed += 1
        return added, removed, tuple(await self.index.recount(settle_s))


def _is_current(request: IngestRequested) -> Callable[[DocumentStatus], bool]:
    """The record still names this message's version and no delete is under way."""

    def current(record: DocumentStatus) -> bool:
        return record.content_hash == request.content_hash and record.status != "deleting"

    return current
