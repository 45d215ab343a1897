"""Which documents each collection holds, and how many, apart from the records so listings stay flat.

The status bucket (``rag-doc-status``) holds a record per document; listing a collection from it
meant reading every key the bucket ever held, deleted ones included, one by one. This index is a
key-value bucket (``rag-doc-index``) with:

- one key per live document, ``d.<collection>.<document id>``. A document's key goes without
  leaving anything behind (a conditional delete, whose marker is then purged from the stream), so
  the server's per-subject state for ``d.<collection>.*`` is exactly that collection's documents and
  listing one collection reads nothing about the others or about the past;
- one key per collection holding any, ``c.<collection>``, whose value is the number of its document
  keys (ASCII decimal). Listing the collections reads these keys, one small read per collection,
  however many documents the collections hold. A count reaching 0 purges its key, so the subjects
  under ``c.*`` are the collections holding documents.

Counts stay exact under concurrent writers because only the writer that changes a document key
changes the count, and every change of either is a compare-and-set on the key's revision:

- a document key is *created* (expected revision: none, or the marker's); of concurrent uploads of
  one new document exactly one creates it and adds 1;
- a document key is *deleted* at the revision just read; of concurrent removers exactly one deletes
  it and subtracts 1;
- a count is rewritten at the revision it was read at, again until it lands (concurrent changes to
  one collection's count retry; changes that do not add or remove a document, such as replacing a
  document or its status moving from queued to indexed, do not touch it).

The index follows the records; it never leads them:

- an upload writes the record first, then the index keys (a crash in between leaves a record the
  index misses until ingest's sweep, ``StatusStore.repair_index``, adds it);
- a delete removes the record first, then the key, then looks at the record again and puts the key
  back if an upload wrote a new record meanwhile. Whatever the interleaving, a document with a
  record ends with its key.

A process that stops between a document key and its count leaves the count off by one; so does a
count key written by a release that kept no counts (an empty value: listings count that
collection's keys instead). The sweep corrects such counts (``recount``), only where a count and the
keys disagree twice, ``SETTLE_S`` apart, with neither changed in between: a writer between its key
and its count is done within milliseconds, and correcting under it would count its document twice.

- a delete removes the record first, then purges the key, then looks at the record again and puts
  the key back if an upload wrote a new record meanwhile. Whatever the interleaving, a document
  with a record ends with its key.

Each collection also has an index version, the revision of its key ``v.<collection>``: every
accepted upload or delete, every change ingest makes to the collection's chunks (and every profile
change) writes the key again (``touch``), so the version only grows. The answer cache keeps an
answer under the version its question was searched at and serves it only while the version holds
(``rag_common.store.answer_cache``); every replica reads the version from the bucket, none holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable

from nats.js import JetStreamContext
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KeyValue
from prometheus_client import Counter as Metric

from rag_common.wire import subjects

log = logging.getLogger("rag.docindex")

ATTEMPTS = 100  # compare-and-set rounds; each round one of the concurrent writers lands
SETTLE_S = 5.0  # how long a count must disagree with the keys, unchanged, before the sweep corrects it
WRONG_LAST_SEQUENCE = (10071, 10164)  # JetStream's "wrong last sequence" error codes

Tally = dict[str, tuple[int | None, int, int]]  # collection: (stored count, its revision, document keys)


class DocumentIndex:
    """The ``rag-doc-index`` bucket: document keys read by subject state, counts read by key."""

    def __init__(
        self,
        js: JetStreamContext,
        kv: KeyValue,
        bucket: str = subjects.DOC_INDEX_BUCKET,
        invalidations: Metric | None = None,
    ) -> None:
        """``invalidations``: counts ``touch`` (``rag_answer_cache_invalidations_total``)."""
        self.js, self.kv = js, kv
        self.stream = f"KV_{bucket}"  # the JetStream KV naming convention (ADR-8)
        self.prefix = f"$KV.{bucket}."
        self.invalidations = invalidations

    async def version(self, collection: str) -> int:
        """The collection's index version: 0 until its first change."""
        try:
            entry = await self.kv.get(f"v.{collection}")
        except KeyNotFoundError:
            return 0
        return int(entry.revision or 0)

    async def touch(self, collection: str) -> int:
        """A new index version for the collection (its documents changed); returns it."""
        revision = int(await self.kv.put(f"v.{collection}", b""))
        if self.invalidations is not None:
            self.invalidations.inc()
        return revision

    # --- writing ------------------------------------------------------------------------------

    async def add(self, collection: str, document_id: str) -> bool:
        """Index a document that has a record; True when its key is new (and so counted)."""
        if not await self._create(f"d.{collection}.{document_id}"):
            return False
        await self._count(collection, +1)
        return True

    async def remove(self, collection: str, document_id: str, recorded: Callable[[], Awaitable[bool]]) -> None:
        """Drop a document whose record was removed; ``recorded`` says whether a record exists now."""
        if await self._delete(f"d.{collection}.{document_id}"):
            await self._count(collection, -1)
        if await recorded():  # an upload wrote a new record after ours went: its key stays
            await self.add(collection, document_id)

    async def _create(self, key: str) -> bool:
        """Write ``key`` if it does not exist; True when this call wrote it."""
        for _ in range(ATTEMPTS):
            try:
                await self.kv.get(key)
                return False
            except KeyNotFoundError as gone:  # never written, purged, or a marker a stopped remover left
                last = int(gone.entry.revision or 0) if gone.entry is not None else 0
            try:
                await self.kv.update(key, b"", last=last)
                return True
            except KeyWrongLastSequenceError:
                continue
        log.warning("index key %s kept changing while being created; the sweep adds it", key)
        return False

    async def _delete(self, key: str) -> bool:
        """Remove ``key`` at the revision read, leaving no marker; True when this call removed it."""
        for _ in range(ATTEMPTS):
            try:
                entry = await self.kv.get(key)
            except KeyNotFoundError as gone:
                await self._purge_marker(key, gone)
                return False
            try:
                await self.kv.delete(key, last=int(entry.revision or 0))
            except APIError as exc:
                if exc.err_code in WRONG_LAST_SEQUENCE:
                    continue
                raise
            try:
                await self.kv.get(key)
            except KeyNotFoundError as gone:
                await self._purge_marker(key, gone)
            return True
        log.warning("index key %s kept changing while being removed; the sweep removes it", key)
        return False

    async def _purge_marker(self, key: str, gone: KeyNotFoundError) -> None:
        """Purge a delete marker from the stream, so that listings never see the key again.

        A key written after the marker is kept (the purge stops at the marker's sequence).
        """
        if gone.entry is not None and gone.entry.revision:
            await self._purge_through(key, int(gone.entry.revision))

    async def _purge_through(self, key: str, revision: int) -> None:
        with contextlib.suppress(NotFoundError):
            await self.js.purge_stream(self.stream, subject=self.prefix + key, seq=revision + 1)

    async def _count(self, collection: str, change: int) -> None:
        """Add ``change`` to the collection's count (compare-and-set); at 0 its key is purged."""
        key = f"c.{collection}"
        for _ in range(ATTEMPTS):
            stored, revision, raw = await self._stored(collection)
            # a count of unknown size (written by a release that kept none) is rewritten as it is:
            # its new revision tells the sweep a writer was here while it counted
            count = None if stored is None else max(stored + change, 0)
            try:
                written = await self.kv.update(key, raw if count is None else str(count).encode(), last=revision)
            except KeyWrongLastSequenceError:
                continue
            if count == 0:
                await self._purge_through(key, written)
            return
        log.warning("the count of %s kept changing; the sweep corrects it", collection)

    # --- reading ------------------------------------------------------------------------------

    async def _subjects(self, pattern: str) -> list[str]:
        info = await self.js.stream_info(self.stream, subjects_filter=self.prefix + pattern)
        return [subject[len(self.prefix) :] for subject in (info.state.subjects or {})]

    async def _stored(self, collection: str) -> tuple[int | None, int, bytes]:
        """The collection's stored count (0 without a key, None if unknown), its revision and value."""
        try:
            entry = await self.kv.get(f"c.{collection}")
        except KeyNotFoundError as gone:
            return 0, int(gone.entry.revision or 0) if gone.entry is not None else 0, b""
        raw = entry.value or b""
        return (int(raw) if raw.isdigit() else None), int(entry.revision or 0), raw

    async def documents(self, collection: str) -> list[str]:
        """The ids of the collection's documents."""
        return [key.rsplit(".", 1)[1] for key in await self._subjects(f"d.{collection}.*")]

    async def collections(self) -> list[str]:
        """The collections holding documents."""
        return sorted(key.split(".", 1)[1] for key in await self._subjects("c.*"))

    async def all_documents(self) -> list[tuple[str, str]]:
        """(collection, document id) of every document."""
        return [(parts[1], parts[2]) for parts in (key.split(".") for key in await self._subjects("d.>"))]

    async def counts(self) -> dict[str, int]:
        """Documents per collection, for the collections holding any: one read per collection."""
        names = await self.collections()
        found = await asyncio.gather(*(self._count_of(name) for name in names))
        return {name: count for name, count in zip(names, found, strict=True) if count}

    async def _count_of(self, collection: str) -> int:
        stored, _, _ = await self._stored(collection)
        if stored is None:  # not counted yet (a release that kept no counts wrote it): count its keys
            return len(await self.documents(collection))
        return stored

    # --- the sweep ------------------------------------------------------------------------------

    async def recount(self, settle_s: float = SETTLE_S) -> list[str]:
        """Correct the counts that disagree with the document keys; returns the collections corrected.

        Only counts that stayed so, unchanged, for ``settle_s`` (see the module's notes).
        """
        first = await self._tally()
        suspects = sorted(name for name, (stored, _, held) in first.items() if stored != held)
        if not suspects:
            return []
        await asyncio.sleep(settle_s)
        second = await self._tally()
        corrected = []
        for name in suspects:
            if second.get(name) != first[name]:  # a writer was here: the next sweep looks again
                continue
            _, revision, held = first[name]
            try:
                written = await self.kv.update(f"c.{name}", str(held).encode(), last=revision)
            except KeyWrongLastSequenceError:
                continue
            if held == 0:
                await self._purge_through(f"c.{name}", written)
            corrected.append(name)
        return corrected

    async def _tally(self) -> Tally:
        held = Counter(collection for collection, _ in await self.all_documents())
        names = sorted(set(held) | set(await self.collections()))
        stored = await asyncio.gather(*(self._stored(name) for name in names))
        return {
            name: (count, revision, held.get(name, 0)) for name, (count, revision, _) in zip(names, stored, strict=True)
        }
