"""In-memory stand-ins for a JetStream key-value bucket and object store, for in-memory component tests.

They keep the semantics the services rely on: revisions, compare-and-set on ``last``, delete
markers that keep the revision, and the errors nats-py raises. The same test bodies also run on
a real server's buckets, which keeps these honest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError

_WRONG_LAST_SEQUENCE = 10071


@dataclass
class Entry:
    key: str
    value: bytes | None
    revision: int


class MemoryKeyValue:
    """A key-value bucket: one sequence for the whole bucket, as JetStream numbers revisions."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._sequence = 0

    async def get(self, key: str) -> Entry:
        entry = self._entries.get(key)
        if entry is None or entry.value is None:
            raise KeyNotFoundError(entry=entry)
        return entry

    async def put(self, key: str, value: bytes) -> int:
        self._sequence += 1
        self._entries[key] = Entry(key, value, self._sequence)
        return self._sequence

    async def update(self, key: str, value: bytes, last: int | None = None) -> int:
        current = self._entries.get(key)
        if (current.revision if current else 0) != (last or 0):
            raise KeyWrongLastSequenceError(description="wrong last sequence")
        return await self.put(key, value)

    async def delete(self, key: str, last: int | None = None) -> bool:
        current = self._entries.get(key)
        if last and (current.revision if current else 0) != last:
            raise APIError(code=400, err_code=_WRONG_LAST_SEQUENCE, description="wrong last sequence")
        self._sequence += 1
        self._entries[key] = Entry(key, None, self._sequence)
        return True

    async def keys(self) -> list[str]:
        return [k for k, e in self._entries.items() if e.value is not None]


@dataclass
class StoredObject:
    data: bytes


class MemoryObjectStore:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    async def put(self, name: str, data: bytes, meta: Any = None) -> None:
        self.objects[name] = data

    async def get(self, name: str) -> StoredObject:
        if name not in self.objects:
            raise NotFoundError()
        return StoredObject(self.objects[name])

    async def delete(self, name: str) -> None:
        if name not in self.objects:
            raise NotFoundError()
        del self.objects[name]
