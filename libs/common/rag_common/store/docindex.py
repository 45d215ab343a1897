"""Which documents each collection holds, kept apart from the status records so listings stay flat.

The status bucket (``rag-doc-status``) holds a record per document; listing a collection from it
meant reading every key the bucket ever held, deleted ones included, one by one. This index is a
key-value bucket (``rag-doc-index``) with one key per live document, ``d.<collection>.<document id>``,
and one per collection that holds any, ``c.<collection>``. A key is *purged from the stream* when its
document goes (not deleted: a delete marker would stay and be counted again), so the server's
per-subject state for ``d.<collection>.*`` is exactly that collection's documents, and listing one
collection reads nothing about the others or about the past.

The index follows the records; it never leads them:

- an upload writes the record first, then the index keys (a crash in between leaves a record the
  index misses until ingest's sweep, ``StatusStore.repair_index``, adds it);
- a delete removes the record first, then purges the key, then looks at the record again and puts
  the key back if an upload wrote a new record meanwhile. Whatever the interleaving, a document
  with a record ends with its key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue

from rag_common.wire import subjects


class DocumentIndex:
    """The ``rag-doc-index`` bucket, read by subject state (one request per listing)."""

    def __init__(self, js: JetStreamContext, kv: KeyValue, bucket: str = subjects.DOC_INDEX_BUCKET) -> None:
        self.js, self.kv = js, kv
        self.stream = f"KV_{bucket}"  # the JetStream KV naming convention (ADR-8)
        self.prefix = f"$KV.{bucket}."

    async def _subjects(self, pattern: str) -> list[str]:
        info = await self.js.stream_info(self.stream, subjects_filter=self.prefix + pattern)
        return [subject[len(self.prefix) :] for subject in (info.state.subjects or {})]

    async def add(self, collection: str, document_id: str) -> None:
        await self.kv.put(f"d.{collection}.{document_id}", b"")
        await self.kv.put(f"c.{collection}", b"")

    async def remove(self, collection: str, document_id: str, recorded: Callable[[], Awaitable[bool]]) -> None:
        """Drop a document whose record was removed; ``recorded`` says whether a record exists now."""
        await self._purge(f"d.{collection}.{document_id}")
        if await recorded():  # an upload wrote a new record after ours went: its key stays
            await self.add(collection, document_id)
            return
        if not await self.documents(collection):
            await self._purge(f"c.{collection}")
            if await self.documents(collection):  # a document arrived meanwhile
                await self.kv.put(f"c.{collection}", b"")

    async def _purge(self, key: str) -> None:
        try:
            await self.js.purge_stream(self.stream, subject=self.prefix + key)
        except NotFoundError:
            pass

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
        """Documents per collection."""
        return dict(Counter(key.split(".")[1] for key in await self._subjects("d.>")))
