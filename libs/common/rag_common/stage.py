"""Wiring shared by the four query stages: subscribe, hand off to the next stage, report failure."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from faststream import AckPolicy
from faststream.nats import JStream, NatsBroker, NatsMessage, PullSub
from pydantic import BaseModel

from rag_common import subjects
from rag_common.broker import QUERY_JSTREAM, FailureHook, consumer_config, ensure_streams, process_message
from rag_common.messages import AnswerDelta, AnswerError, QueryRequested
from rag_common.settings import ServiceSettings
from rag_common.telemetry import ServiceTelemetry

log = logging.getLogger(__name__)

M = TypeVar("M", bound=QueryRequested)
W = TypeVar("W", bound=BaseModel)


def answer_failure_hook(broker: NatsBroker) -> FailureHook:
    """Tell the waiting gateway replica that its request failed, so the client gets an error now."""

    async def report(fields: dict[str, Any], code: str, message: str, status: int) -> None:
        gateway_id, request_id = fields.get("gateway_id"), fields.get("request_id")
        if not (isinstance(gateway_id, str) and isinstance(request_id, str)):
            log.warning("cannot report %s to a gateway: message has no gateway_id/request_id", code)
            return
        error = AnswerError(request_id=request_id, code=code, message=message, status=status)
        await broker.publish(error, subjects.answer_subject(gateway_id, request_id, "error"))

    return report


def register_work_queue(
    broker: NatsBroker,
    settings: ServiceSettings,
    telemetry: ServiceTelemetry,
    *,
    subject: str,
    consumer: str,
    stream: JStream,
    area: str,
    model: type[W],
    work: Callable[[W], Awaitable[None]],
    ack_wait: float,
    on_failure: FailureHook,
    stage: str | None = None,
) -> None:
    """Consume ``subject`` through a durable pull consumer that every replica shares.

    Replicas split the work; a message whose handler dies is redelivered to another replica after
    ``ack_wait``; each replica handles up to ``settings.concurrency`` messages at once. Fetches
    take one message at a time: nats-py's batch fetch waits for a full batch (up to its timeout)
    once the first message has arrived, which would add seconds to a lone question.
    """

    @broker.subscriber(
        subject,
        durable=consumer,
        stream=stream,
        pull_sub=PullSub(batch_size=1, timeout=5.0),
        max_workers=settings.concurrency,
        config=consumer_config(settings, ack_wait=ack_wait),
        ack_policy=AckPolicy.MANUAL,
    )
    async def handle(msg: NatsMessage) -> None:
        await process_message(
            msg,
            model,
            work,
            broker=broker,
            telemetry=telemetry,
            stage=stage or consumer,
            area=area,
            max_deliver=settings.max_deliver,
            on_failure=on_failure,
        )


def register_query_stage(
    broker: NatsBroker,
    settings: ServiceSettings,
    telemetry: ServiceTelemetry,
    *,
    subject: str,
    consumer: str,
    model: type[M],
    work: Callable[[M], Awaitable[None]],
    ack_wait: float | None = None,
) -> None:
    """A query stage: a work queue on ``RAG_QUERY`` whose failures reach the waiting client."""
    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subject,
        consumer=consumer,
        stream=QUERY_JSTREAM,
        area="query",
        model=model,
        work=work,
        ack_wait=ack_wait or settings.query_ack_wait_s,
        on_failure=answer_failure_hook(broker),
    )


async def publish_stage(broker: NatsBroker, message: QueryRequested, subject: str) -> None:
    """Hand a question to the next stage; the message id makes a redelivered stage's repeat a no-op."""
    await broker.publish(
        message,
        subject,
        stream=subjects.QUERY_STREAM,
        headers={"Nats-Msg-Id": f"{message.request_id}:{subject}"},
    )


async def publish_delta(broker: NatsBroker, query: QueryRequested, delta: AnswerDelta) -> None:
    await broker.publish(delta, subjects.answer_subject(query.gateway_id, query.request_id, "delta"))


def register_ping(
    broker: NatsBroker, service: str, check: Callable[[], Awaitable[dict[str, Any]]] | None = None
) -> None:
    """Answer ``rag.control.ping.<service>`` so the gateway's /readyz can see this service."""

    @broker.subscriber(subjects.ping_subject(service))
    async def ping() -> dict[str, Any]:
        details = await check() if check else {}
        return {"service": service, "status": "ok", **details}


async def prepare_jetstream(broker: NatsBroker, settings: ServiceSettings) -> None:
    """Connect and declare the streams before subscribers bind their consumers to them."""
    await broker.connect()
    await ensure_streams(broker.connection.jetstream(), settings)


async def open_buckets(broker: NatsBroker, settings: ServiceSettings) -> tuple[Any, Any]:
    """The document object store and the status key-value bucket (declared if missing)."""
    from nats.js.api import StorageType

    objects = await broker.object_storage(
        subjects.DOCUMENTS_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas
    )
    status = await broker.key_value(
        subjects.DOC_STATUS_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas, history=5
    )
    return objects, status


async def open_sessions_bucket(broker: NatsBroker, settings: ServiceSettings, *, ttl_s: float) -> Any:
    """The conversation-memory bucket; its TTL forgets idle conversations (declared if missing)."""
    from nats.js.api import StorageType

    return await broker.key_value(
        subjects.SESSIONS_BUCKET, storage=StorageType.FILE, replicas=settings.js_replicas, history=1, ttl=ttl_s
    )
