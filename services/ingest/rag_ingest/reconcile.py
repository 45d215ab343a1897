"""Find and delete orphan objects: stored bytes that no status record will ever read again.

Ingest deletes a version's bytes when it is replaced, when it fails and when its document is
deleted; this sweep catches what those miss (a worker killed between two steps, an older release,
a race between uploads of one name). An object is an orphan when:

- its name is ``<collection>/<document id>/<hash>`` and the document's status record is gone, is
  of another collection, names another version, or names this version as ``failed``;
- its name is the older ``<collection>/<document id>`` and the document has no record.

An object younger than the grace period is never deleted, whatever the records say: the gateway
stores an upload's bytes before it writes the status record that accepts them, so a fresh object
without a record may be an upload being accepted right now. Names of any other shape are left alone.

A deleted object leaves a marker in the bucket's stream (its meta message, flagged deleted, about
half a kilobyte) that nats-py's object store keeps forever; one per failed version adds up. The
sweep purges each marker from its meta subject (``$O.<bucket>.M.<name in base64url>``, the object
store's layout), up to the marker's own sequence only: an object stored again under that name
meanwhile is a later message and stays.
"""

from __future__ import annotations

import base64
import json
import logging
from datetime import UTC, datetime
from typing import Any

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from rag_common.store.documents import StatusStore
from rag_common.wire.messages import DocumentStatus

log = logging.getLogger("rag.ingest.reconcile")


def _age_s(mtime: str | None, now: datetime) -> float | None:
    """Seconds since the object was stored; None when its time is missing or unreadable."""
    if not mtime:
        return None
    text = mtime.replace("Z", "+00:00")
    whole, dot, rest = text.partition(".")
    if dot:  # Go writes nanoseconds; datetime reads at most microseconds
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{whole}.{rest[: min(digits, 6)]}{rest[digits:]}"
    try:
        stored = datetime.fromisoformat(text)
    except ValueError:
        return None
    if stored.tzinfo is None:
        stored = stored.replace(tzinfo=UTC)
    return (now - stored).total_seconds()


def is_orphan(name: str, record: DocumentStatus | None) -> bool:
    """Whether no status record will read the object ``name`` again (the grace period aside)."""
    parts = name.split("/")
    if len(parts) == 2:  # an older release's one object per document
        return record is None
    if len(parts) != 3:
        return False
    collection, _, version = parts
    if record is None or record.collection != collection:
        return True
    return record.content_hash != version or record.status == "failed"


async def remove_orphans(objects: Any, status: StatusStore, *, grace_s: float) -> list[str]:
    """Delete the orphan objects older than ``grace_s``; the names deleted."""
    try:
        infos = await objects.list(ignore_deletes=True)
    except NotFoundError:  # an empty bucket
        return []
    now = datetime.now(UTC)
    records: dict[str, DocumentStatus | None] = {}
    removed = []
    for info in infos:
        name = str(info.name)
        parts = name.split("/")
        if len(parts) not in (2, 3) or getattr(info, "deleted", False):
            continue
        age = _age_s(getattr(info, "mtime", None), now)
        if age is None or age < grace_s:
            continue
        document_id = parts[1]
        if document_id not in records:
            records[document_id] = await status.get(document_id)
        if not is_orphan(name, records[document_id]):
            continue
        try:
            await objects.delete(name)
        except Exception as exc:  # deleted meanwhile by ingest or another replica's sweep
            log.debug("orphan %s not deleted: %r", name, exc)
            continue
        removed.append(name)
    if removed:
        log.info("deleted %d orphan objects (no status record reads them)", len(removed))
    return removed


def meta_subject(bucket: str, name: str) -> str:
    """The subject of an object's meta messages in the object store's stream."""
    return f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"


async def purge_delete_markers(js: JetStreamContext, objects: Any, bucket: str) -> int:
    """Purge the markers deleted objects left in the bucket's stream; how many were purged."""
    try:
        infos = await objects.list(ignore_deletes=False)
    except NotFoundError:  # an empty bucket
        return 0
    stream = f"OBJ_{bucket}"
    purged = 0
    for info in infos:
        if not getattr(info, "deleted", False):
            continue
        subject = meta_subject(bucket, str(info.name))
        try:
            last = await js.get_last_msg(stream, subject)
            if last.seq is None or not json.loads(last.data or b"{}").get("deleted"):
                continue  # stored again since the listing: an object, not a marker
            await js.purge_stream(stream, subject=subject, seq=last.seq + 1)
        except Exception as exc:  # purged meanwhile by another replica's sweep
            log.debug("delete marker of %s not purged: %r", info.name, exc)
            continue
        purged += 1
    if purged:
        log.info("purged %d delete markers from %s", purged, stream)
    return purged
