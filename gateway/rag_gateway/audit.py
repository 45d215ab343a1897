"""The audit log: an append-only JetStream stream the gateway writes and admins read.

Recorded: keys created and revoked (by whom, with the key's name and scopes), documents uploaded
and deleted (by which key), profiles set, and every refused request (401, 403, 429; and 404 where
a request was refused as "not found" so as not to tell whether the thing exists). Never a key, a
secret or a document's content.

The stream denies deletes and purges (append-only through the API); ``RAG_GATEWAY_AUDIT_MAX_AGE_S``
and ``RAG_GATEWAY_AUDIT_MAX_BYTES`` bound it (oldest events go first), so a flood of refused
requests cannot fill the disk. Each event's subject is ``rag.audit.<action>.<actor>``: a reader
filters on the action or the actor on the server. Writing an event never fails a request: when
NATS does not take it, the gateway logs a warning and goes on.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError
from starlette.requests import Request

from rag_common.wire import subjects
from rag_common.wire.messages import AuditEvent
from rag_gateway.auth import Principal
from rag_gateway.errors import request_id
from rag_gateway.settings import GatewaySettings

log = logging.getLogger("rag.gateway")

ANONYMOUS = "anonymous"
READ_TIMEOUT_S = 2.0


def audit_stream_config(settings: GatewaySettings) -> StreamConfig:
    return StreamConfig(
        name=subjects.AUDIT_STREAM,
        subjects=[subjects.AUDIT_SUBJECTS],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        max_age=settings.audit_max_age_s,
        max_bytes=settings.audit_max_bytes,
        discard=DiscardPolicy.OLD,
        deny_delete=True,
        deny_purge=True,
        num_replicas=settings.js_replicas,
    )


async def ensure_audit_stream(js: JetStreamContext, settings: GatewaySettings) -> None:
    """Create the stream, or bring its retention to the settings (idempotent)."""
    config = audit_stream_config(settings)
    try:
        await js.add_stream(config=config)
    except BadRequestError:
        await js.update_stream(config=config)


def who(principal: Principal | None) -> dict[str, Any]:
    """The actor fields of an event for ``principal`` (None: no valid key)."""
    if principal is None:
        return {"actor": ANONYMOUS}
    name = principal.name if principal.key_id else None
    return {"actor": principal.actor, "actor_name": name, "tenant": principal.tenant}


def where(request: Request | None) -> dict[str, Any]:
    """The request fields of an event: its id, method and path (never its query string or body)."""
    if request is None:
        return {}
    return {"request_id": request_id(request), "method": request.method, "path": request.url.path}


class AuditLog:
    """Writes and reads the stream through ``js`` (nats-py keeps one connection across reconnects)."""

    def __init__(self, js: JetStreamContext, settings: GatewaySettings) -> None:
        self.js, self.settings = js, settings

    async def record(self, event: AuditEvent) -> None:
        """Append one event; a failure is logged, never raised (the request it records goes on)."""
        subject = subjects.audit_subject(event.action, event.actor)
        try:
            await self.js.publish(
                subject,
                event.model_dump_json().encode(),
                stream=subjects.AUDIT_STREAM,
                timeout=self.settings.publish_timeout_s,
            )
        except Exception as exc:
            log.warning("audit event %s by %s not recorded: %r", event.action, event.actor, exc)

    async def refused(
        self, request: Request | None, principal: Principal | None, status: int, reason: str, **fields: Any
    ) -> None:
        await self.record(
            AuditEvent(
                action="request_refused", status=status, reason=reason, **who(principal), **where(request), **fields
            )
        )

    async def read(
        self,
        *,
        action: str | None = None,
        actor: str | None = None,
        after: int | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> tuple[list[tuple[int, AuditEvent]], int | None]:
        """Up to ``limit`` events, oldest first, after sequence ``after`` or from time ``since``
        (else from the oldest kept), filtered on the server by action and actor. Returns them with
        their stream sequence and the sequence to pass as ``after`` for the next page."""
        config = ConsumerConfig(
            ack_policy=AckPolicy.NONE,
            inactive_threshold=30.0,
            mem_storage=True,
            deliver_policy=DeliverPolicy.ALL,
        )
        if after is not None:
            config.deliver_policy, config.opt_start_seq = DeliverPolicy.BY_START_SEQUENCE, after + 1
        elif since is not None:
            config.deliver_policy = DeliverPolicy.BY_START_TIME
            config.opt_start_time = dt.datetime.fromtimestamp(since, tz=dt.UTC)
        subject = subjects.audit_subject(action or "*", actor or "*")
        sub = await self.js.pull_subscribe(subject, stream=subjects.AUDIT_STREAM, config=config)
        events: list[tuple[int, AuditEvent]] = []
        try:
            pending = (await sub.consumer_info()).num_pending or 0
            while pending > 0 and len(events) < limit:
                try:
                    batch = await sub.fetch(min(limit - len(events), pending), timeout=READ_TIMEOUT_S)
                except (TimeoutError, NatsTimeoutError):
                    break
                for msg in batch:
                    events.append((msg.metadata.sequence.stream, AuditEvent.model_validate_json(msg.data)))
                pending -= len(batch)
        finally:
            await sub.unsubscribe()
        last = events[-1][0] if events else after
        return events, last
