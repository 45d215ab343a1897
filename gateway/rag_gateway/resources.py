"""What the gateway opens on NATS at start-up: its buckets, streams and the stores around them.

They are made in the app's lifespan, once the broker can reach NATS, and handed to requests as
lifespan state (``request.state.resources``); nothing sets them later on a shared object, so a
route that holds a ``Resources`` holds every store, open.
"""

from __future__ import annotations

from dataclasses import dataclass

from faststream.nats import NatsBroker
from nats.js.object_store import ObjectStore
from prometheus_client import Counter

from rag_common.store.assessments import AssessmentStore
from rag_common.store.buckets import open_assessments_bucket, open_buckets, open_document_index, open_sessions_bucket
from rag_common.store.documents import StatusStore
from rag_common.store.profiles import ProfileBook, open_profiles_bucket
from rag_gateway.audit import AuditLog, ensure_audit_stream
from rag_gateway.keystore import KeyStore, open_key_store
from rag_gateway.sessions import SessionStore
from rag_gateway.settings import GatewaySettings


@dataclass(frozen=True, slots=True)
class Resources:
    """The gateway's stores, every one open."""

    status: StatusStore  # documents' status records and the per-collection listing index
    objects: ObjectStore  # the uploaded bytes
    sessions: SessionStore  # conversation memory
    keys: KeyStore  # API keys (the admin key is a setting)
    assessments: AssessmentStore
    profiles: ProfileBook  # the collections file, overridden by the admin API's bucket
    audit: AuditLog


async def open_resources(broker: NatsBroker, settings: GatewaySettings, invalidations: Counter) -> Resources:
    """Open (declaring what is missing) every bucket and stream the routes use; ``invalidations``
    counts the answer-cache retirements the document index makes."""
    objects, kv = await open_buckets(broker, settings)
    index = await open_document_index(broker, settings, invalidations=invalidations)
    sessions_kv = await open_sessions_bucket(broker, settings, ttl_s=settings.session_ttl_s)
    keys = await open_key_store(broker, settings)
    assessments = AssessmentStore(await open_assessments_bucket(broker, settings))
    js = broker.connection.jetstream()
    await ensure_audit_stream(js, settings)
    return Resources(
        status=StatusStore(kv, index),
        objects=objects,
        sessions=SessionStore(sessions_kv, max_turns=settings.session_max_turns),
        keys=keys,
        assessments=assessments,
        profiles=ProfileBook(settings.collections_file, await open_profiles_bucket(broker, settings)),
        audit=AuditLog(js, settings),
    )
