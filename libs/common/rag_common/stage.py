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
from rag_common.messages import AnswerDelta, AnswerError, Query, QueryRequested, StageMessage
from rag_common.payload import fit_payload, payload_limit
from rag_common.recovery import ConsumerSpec, layout_of
from rag_common.settings import ServiceSettings
from rag_common.telemetry import ServiceTelemetry

log = logging.getLogger(__name__)

M = TypeVar("M", bound=QueryRequested | StageMessage)
W = TypeVar("W", bound=BaseModel)


def answer_failure_hook(broker: NatsBroker) -> FailureHook:
    """Tell the waiting gateway replica that its request failed, so the client gets an error now."""

    async def report(fields: dict[str, Any], code: str, message: str, status: int) -> None:
        query = fields.get("query")  # every query-path message carries the question as ``query``
        ids = query if isinstance(query, dict) else fields
        gateway_id, request_id = ids.get("gateway_id"), ids.get("request_id")
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

    telemetry.declare_stage(stage or consumer)
    config = consumer_config(settings, ack_wait=ack_wait)
    layout = layout_of(broker)
    if layout is not None:
        layout.add_consumer(ConsumerSpec(stream=stream.name, durable=consumer, subject=subject, config=config))

    @broker.subscriber(
        subject,
        durable=consumer,
        stream=stream,
        pull_sub=PullSub(batch_size=1, timeout=5.0),
        max_workers=settings.concurrency,
        config=config,
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
            heartbeat_s=ack_wait / 3,
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
        ack_wait=ack_wait or settings.stage_ack_wait_s,
        on_failure=answer_failure_hook(broker),
    )


async def publish_stage(broker: NatsBroker, message: StageMessage, subject: str) -> None:
    """Hand a question to the next stage; the message id makes a redelivered stage's repeat a no-op."""
    await broker.publish(
        fit_payload(message, payload_limit(broker)),
        subject,
        stream=subjects.QUERY_STREAM,
        headers={"Nats-Msg-Id": f"{message.query.request_id}:{subject}"},
    )


async def publish_delta(broker: NatsBroker, query: Query, delta: AnswerDelta) -> None:
    """A token delta goes straight to the connection: no span and no trace headers per token."""
    subject = subjects.answer_subject(query.gateway_id, query.request_id, "delta")
    await broker.connection.publish(subject, delta.model_dump_json().encode())


def register_ping(
    broker: NatsBroker, service: str, check: Callable[[], Awaitable[dict[str, Any]]] | None = None
) -> None:
    """Answer ``rag.control.ping.<service>`` so the gateway's /readyz can see this service."""

    @broker.subscriber(subjects.ping_subject(service))
    async def ping() -> dict[str, Any]:
        details = await check() if check else {}
        layout = layout_of(broker)
        missing = await layout.missing() if layout else []
        if missing:  # connected, but its streams or consumers are gone (e.g. NATS restarted)
            return {"service": service, "status": "degraded", "missing": missing, **details}
        return {"service": service, "status": "ok", **details}


def nats_connected(broker: NatsBroker) -> bool:
    connection = broker.config.connection_state.connection if broker else None
    return bool(connection and connection.is_connected)


def serve_health(
    broker: NatsBroker,
    telemetry: ServiceTelemetry,
    host: str,
    port: int,
    liveness_timeout_s: float,
) -> int:
    """``/metrics``, ``/livez`` (the event loop answers) and ``/readyz`` (connected to NATS)."""

    async def ready() -> dict[str, str]:
        return {"nats": "ok" if nats_connected(broker) else "disconnected"}

    return telemetry.serve_metrics(host, port, ready=ready, liveness_timeout_s=liveness_timeout_s)


async def prepare_jetstream(broker: NatsBroker, settings: ServiceSettings) -> None:
    """Connect and declare the streams and consumers (updating their settings) before subscribers
    bind to them, then keep them declared across NATS restarts (``rag_common.recovery``)."""
    await broker.connect()
    layout = layout_of(broker)
    if layout is None:
        await ensure_streams(broker.connection.jetstream(), settings)
    else:
        await layout.start(broker.connection.jetstream(), check_interval_s=settings.js_check_interval_s)


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
