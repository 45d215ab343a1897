"""API key records in a JetStream key-value bucket, one entry per key id.

Every gateway replica reads the bucket on each request (a sub-millisecond KV get), so a key
created or revoked on one replica holds on all of them at once.
"""

from __future__ import annotations

from typing import Any

from faststream.nats import NatsBroker
from nats.js.errors import KeyNotFoundError, NoKeysError
from nats.js.kv import KeyValue

from rag_common.config.settings import ServiceSettings
from rag_common.wire import subjects
from rag_gateway.auth import KeyCreate, KeyRecord, hash_key, new_key


async def open_key_store(broker: NatsBroker, settings: ServiceSettings) -> KeyStore:
    from nats.js.api import StorageType

    kv: Any = await broker.key_value(
        subjects.API_KEYS_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas, history=1
    )
    return KeyStore(kv)


class KeyStore:
    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def create(self, spec: KeyCreate) -> tuple[KeyRecord, str]:
        """Store a new key's record; returns it with the plaintext key (shown once)."""
        key_id, key = new_key()
        record = KeyRecord(
            id=key_id,
            name=spec.name,
            key_hash=hash_key(key),
            collections=spec.collections,
            rate_limit_per_min=spec.rate_limit_per_min,
            tenant=spec.tenant,
        )
        await self.kv.create(key_id, record.model_dump_json().encode())
        return record, key

    async def get(self, key_id: str) -> KeyRecord | None:
        try:
            entry = await self.kv.get(key_id)
        except KeyNotFoundError:  # also raised for a deleted key
            return None
        if not entry.value:
            return None
        return KeyRecord.model_validate_json(entry.value)

    async def list(self) -> list[KeyRecord]:
        try:
            ids = await self.kv.keys()
        except NoKeysError:
            return []
        records = [r for r in [await self.get(i) for i in ids] if r is not None]
        return sorted(records, key=lambda r: (r.created_at, r.id))

    async def delete(self, key_id: str) -> bool:
        if await self.get(key_id) is None:
            return False
        await self.kv.purge(key_id)
        return True
