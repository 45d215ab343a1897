"""API keys and what they allow: plain functions and values, no broker, no HTTP.

A key is ``rag_<id>_<secret>``: a 16-hex-digit public id (the name it is listed and revoked by)
and 32 random bytes. Only the SHA-256 of the whole key is stored. A fast hash is the right tool
here: the key carries 256 bits of entropy, so no dictionary or brute-force attack applies, and a
slow password hash (scrypt, argon2) would only add CPU time to every request. Comparisons are
constant-time.

A key is scoped to collections, each with ``read`` and/or ``write`` rights; ``"*"`` stands for
every collection. The admin key (from the environment) may do everything, including managing keys.
A key may name a tenant: keys of one tenant share their conversations (sessions); a key without
one owns its sessions alone (``Principal.owner``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rag_common.wire.names import COLLECTION_RULE, valid_collection

KEY_PREFIX = "rag_"
KEY_ID_HEX = 16
ALL_COLLECTIONS = "*"
ADMIN_NAME = "admin"
# A key's name is shown in listings, logs and the audit log: one line of plain text, no markup.
KEY_NAME_RE = re.compile(r"[\w .,:;@/()+#-]{1,64}")
KEY_NAME_RULE = "1-64 letters, digits, spaces or . , : ; @ / ( ) + # - _ (one line, no markup such as < > & \" ' `)"
_KEY_RE = re.compile(rf"{KEY_PREFIX}(?P<id>[0-9a-f]{{{KEY_ID_HEX}}})_(?P<secret>[A-Za-z0-9_-]{{43}})")


class Right(StrEnum):
    READ = "read"  # ask questions, stream answers, list documents and their status, read sessions
    WRITE = "write"  # upload and delete documents


def hash_key(key: str) -> str:
    """What is stored for a key: ``sha256:<hex>`` of the whole key string."""
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def key_matches(key: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key), stored_hash)


def new_key() -> tuple[str, str]:
    """A fresh ``(key_id, key)``; the key is shown to its creator once and never stored."""
    key_id = secrets.token_hex(KEY_ID_HEX // 2)
    return key_id, f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"


def key_id_of(key: str) -> str | None:
    """The public id inside a presented key, or None when it is not shaped like one of ours."""
    match = _KEY_RE.fullmatch(key)
    return match.group("id") if match else None


def valid_scope_name(name: str) -> bool:
    return name == ALL_COLLECTIONS or valid_collection(name)


class KeyRecord(BaseModel):
    """What the key bucket holds per key id (never the key itself)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    name: str
    key_hash: str
    collections: dict[str, list[Right]]
    rate_limit_per_min: int | None = None  # None: the gateway's default
    tenant: str | None = None  # None: the key is its own tenant
    created_at: float = Field(default_factory=time.time)

    def public(self) -> dict[str, object]:
        """The record as listed: everything but the hash."""
        return self.model_dump(mode="json", exclude={"key_hash"})


class KeyCreate(BaseModel):
    """``POST /v1/keys``: a name, rights per collection, optionally its own rate limit."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=64, description="who or what uses the key")
    collections: dict[str, list[Right]] = Field(
        ..., description='rights per collection, e.g. {"docs": ["read"], "*": ["read"]} ("*" = every collection)'
    )
    rate_limit_per_min: int | None = Field(
        None, ge=1, le=100_000, description="requests per minute (default: the gateway setting)"
    )
    tenant: str | None = Field(
        None, description=f"keys of one tenant share conversations ({COLLECTION_RULE}); default: the key alone"
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if KEY_NAME_RE.fullmatch(value) is None or value != value.strip():
            raise ValueError(f"name must be {KEY_NAME_RULE}, without leading or trailing spaces")
        return value

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, value: str | None) -> str | None:
        if value is not None and not valid_collection(value):
            raise ValueError(f"tenant must be {COLLECTION_RULE}")
        return value

    @field_validator("collections")
    @classmethod
    def _collections(cls, value: dict[str, list[Right]]) -> dict[str, list[Right]]:
        if not value:
            raise ValueError("a key needs at least one collection")
        if len(value) > 256:
            raise ValueError("at most 256 collections per key")
        for name, rights in value.items():
            if not valid_scope_name(name):
                raise ValueError(f"{name!r} is not a collection name ({COLLECTION_RULE}) or '*'")
            if not rights:
                raise ValueError(f"collection {name!r}: give at least one right (read, write)")
        return {name: sorted(set(rights)) for name, rights in value.items()}


@dataclass(frozen=True)
class Principal:
    """Who is calling and what they may do; every endpoint asks this object, never the key."""

    name: str
    key_id: str | None = None  # None: the admin key, or nobody when authentication is off
    admin: bool = False
    scopes: dict[str, frozenset[Right]] = field(default_factory=dict)
    rate_limit_per_min: int | None = None  # None: not limited
    tenant: str | None = None

    @classmethod
    def for_key(cls, record: KeyRecord, default_rate_limit: int | None) -> Principal:
        return cls(
            name=record.name,
            key_id=record.id,
            scopes={c: frozenset(r) for c, r in record.collections.items()},
            rate_limit_per_min=record.rate_limit_per_min or default_rate_limit,
            tenant=record.tenant,
        )

    @property
    def owner(self) -> str:
        """Who owns the sessions this caller starts: its tenant, else its key, else the admin (or
        everyone, with authentication off). Letters, digits and '-' only (a bucket key's part)."""
        if self.tenant is not None:
            return f"tenant-{self.tenant}"
        if self.key_id is not None:
            return f"key-{self.key_id}"
        return "admin" if self.name == ADMIN_NAME else "local"

    @property
    def actor(self) -> str:
        """How the audit log names this caller: its key id, ``admin`` or ``local``."""
        return self.key_id or ("admin" if self.name == ADMIN_NAME else "local")

    def rights(self, collection: str) -> frozenset[Right]:
        if self.admin:
            return frozenset(Right)
        return self.scopes.get(collection, frozenset()) | self.scopes.get(ALL_COLLECTIONS, frozenset())

    def can(self, collection: str, right: Right) -> bool:
        return right in self.rights(collection)

    @property
    def all_collections(self) -> bool:
        """Whether this caller sees every collection (admin, or a ``"*"`` read scope)."""
        return self.admin or Right.READ in self.scopes.get(ALL_COLLECTIONS, frozenset())

    def visible_collections(self, existing: Iterable[str]) -> list[str]:
        """What a listing shows this caller: existing collections it may read, plus those its key
        names with a read right (they exist for it even before their first document)."""
        named = (c for c in self.scopes if c != ALL_COLLECTIONS)
        return sorted(c for c in {*existing, *named} if self.can(c, Right.READ))


ADMIN = Principal(name=ADMIN_NAME, admin=True)
LOCAL = Principal(name="local (authentication off)", admin=True)
