"""A collection's effective profile: the collections file, overridden by what the admin API set.

``PUT /v1/collections/{name}/profile`` stores the fields it was given in a JetStream key-value
bucket (one entry per collection); the router reads the effective profile once per question and
carries it in the stage messages (``StageMessage.profile``) to the generator and the evaluator, so
a change holds from the next question on, on every replica, with no restart. Fields the API left
out keep the file's value, then the default.

There is no cache: a key-value get is one sub-millisecond round trip, and a cache (or a watch)
would let a question that follows a PUT still see the old profile.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from faststream.nats import NatsBroker
from nats.js.api import StorageType
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from rag_common.config.settings import ServiceSettings
from rag_common.config.texts import CollectionTexts, collection_texts
from rag_common.wire import subjects

log = logging.getLogger(__name__)


async def open_profiles_bucket(broker: NatsBroker, settings: ServiceSettings) -> KeyValue:
    """The bucket of API-set profiles, declared if missing.

    History 5, so a mistaken PUT can be looked up with ``nats kv history``.
    """
    kv: KeyValue = await broker.key_value(
        subjects.PROFILES_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas, history=5
    )
    return kv


class ProfileBook:
    """The profiles of every collection: the file at ``path`` plus the bucket ``kv`` (when open)."""

    def __init__(self, path: Path | None, kv: KeyValue | None = None) -> None:
        self.path, self.kv = path, kv

    async def override(self, collection: str) -> dict[str, Any]:
        """The fields the admin API set for ``collection`` (empty when none)."""
        if self.kv is None:
            return {}
        try:
            entry = await self.kv.get(collection)
        except KeyNotFoundError:  # also a deleted override
            return {}
        if not entry.value:
            return {}
        # Validated before it was stored; validated again as part of the merged profile.
        fields: dict[str, Any] = CollectionTexts.model_validate_json(entry.value).model_dump(exclude_unset=True)
        return fields

    async def get(self, collection: str) -> CollectionTexts:
        """The effective profile of ``collection``: file, then API override, defaults filled."""
        from_file = collection_texts(self.path, collection)
        override = await self.override(collection)
        if not override:
            return from_file
        return CollectionTexts.model_validate({**from_file.model_dump(exclude_unset=True), **override})

    async def lookup(self, collection: str) -> CollectionTexts:
        """``get``, or the file's profile when the bucket cannot be read (NATS away).

        A question is still answered, in the file's words, and the failure is logged.
        """
        try:
            return await self.get(collection)
        except Exception as exc:
            log.warning("profile of collection %s: override unreadable, file used: %r", collection, exc)
            return collection_texts(self.path, collection)

    async def put(self, collection: str, profile: CollectionTexts) -> CollectionTexts:
        """Store the fields ``profile`` sets as the override of ``collection``; returns the effective profile."""
        if self.kv is None:
            raise RuntimeError("the profiles bucket is not open")
        stored = profile.model_dump_json(exclude_unset=True)  # only the fields the caller set
        await self.kv.put(collection, stored.encode())
        return await self.get(collection)

    async def delete(self, collection: str) -> bool:
        """Drop the API override of ``collection`` (the file's profile holds again)."""
        if self.kv is None:
            raise RuntimeError("the profiles bucket is not open")
        if not await self.override(collection):
            return False
        await self.kv.delete(collection)
        return True
