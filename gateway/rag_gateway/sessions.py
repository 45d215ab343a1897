"""Conversation memory: the turns of each ``session_id`` in a JetStream key-value bucket.

The bucket's TTL ends idle conversations; each record keeps at most ``max_turns`` turns, so a
session never grows without bound. A session belongs to whoever started it (the gateway's
``Principal.owner``: a tenant, a key or the admin): its record is kept under ``<owner>.<id>``
(``scoped_id``), so the same id from another owner is simply another conversation, with nothing to
read, extend, delete or even notice. Within one owner, a session belongs to the collection it
started in: asking with its id in another collection is an error.
Writes are compare-and-set on the key's revision, so two answers finishing at once both land.
"""

from __future__ import annotations

import re
import time

from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue
from pydantic import BaseModel, ConfigDict, Field

from rag_common.wire.messages import Turn

# Key-value keys allow letters, digits, '-', '_', '=' and '.'; ids are kept to a safe subset.
SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,128}")
ANSWER_CHARS = 1500  # an earlier answer is context for rewriting, not a transcript
_WRITE_ATTEMPTS = 5


OWNER_RE = re.compile(r"[A-Za-z0-9-]{1,80}")


def valid_session_id(session_id: str) -> bool:
    return SESSION_ID_RE.fullmatch(session_id) is not None


def scoped_id(owner: str, session_id: str) -> str:
    """The bucket key of ``owner``'s session ``session_id`` (the store's methods take this)."""
    if OWNER_RE.fullmatch(owner) is None or not valid_session_id(session_id):
        raise ValueError(f"not a session owner and id: {owner!r}, {session_id!r}")
    return f"{owner}.{session_id}"


class SessionCollectionMismatch(ValueError):
    """The session was started in another collection."""

    def __init__(self, session_id: str, collection: str) -> None:
        super().__init__(f"session {session_id!r} belongs to another collection than {collection!r}")


class Session(BaseModel):
    """What the bucket holds per session id."""

    model_config = ConfigDict(extra="ignore")

    collection: str
    turns: list[Turn] = Field(default_factory=list)
    request_ids: list[str] = Field(default_factory=list)  # answers already recorded (redelivery-safe)
    updated_at: float = Field(default_factory=time.time)


class SessionStore:
    def __init__(self, kv: KeyValue, *, max_turns: int) -> None:
        self.kv = kv
        self.max_turns = max_turns

    async def _read(self, session_id: str) -> tuple[Session | None, int | None]:
        try:
            entry = await self.kv.get(session_id)
        except KeyNotFoundError:
            return None, None
        if entry.value is None:
            return None, None
        return Session.model_validate_json(entry.value), entry.revision

    async def history(self, session_id: str, collection: str) -> list[Turn]:
        """The earlier turns of a session in ``collection`` (oldest first); empty for a new one."""
        session, _ = await self._read(session_id)
        if session is None:
            return []
        if session.collection != collection:
            raise SessionCollectionMismatch(session_id, collection)
        return list(session.turns)

    async def get(self, session_id: str) -> Session | None:
        session, _ = await self._read(session_id)
        return session

    async def record(self, session_id: str, collection: str, request_id: str, turn: Turn) -> None:
        """Append one answered turn; a repeat of the same request changes nothing."""
        turn = turn.model_copy(update={"answer": turn.answer[:ANSWER_CHARS]})
        for _ in range(_WRITE_ATTEMPTS):
            session, revision = await self._read(session_id)
            if session is None:
                session = Session(collection=collection)
            elif session.collection != collection:
                raise SessionCollectionMismatch(session_id, collection)
            if request_id in session.request_ids:
                return
            session.turns = [*session.turns, turn][-self.max_turns :]
            session.request_ids = [*session.request_ids, request_id][-self.max_turns :]
            session.updated_at = time.time()
            data = session.model_dump_json().encode()
            try:
                if revision is None:
                    await self.kv.create(session_id, data)
                else:
                    await self.kv.update(session_id, data, last=revision)
                return
            except KeyWrongLastSequenceError:
                continue  # another answer of this session landed first: read again
        raise RuntimeError(f"could not record a turn of session {session_id!r}: too many concurrent writes")

    async def delete(self, session_id: str) -> bool:
        session, _ = await self._read(session_id)
        if session is None:
            return False
        await self.kv.purge(session_id)
        return True
