"""The JetStream layout: the three streams, their consumers' configuration, and declaring them.

Durable ingest work (file storage), short-lived query stages (memory storage, work queues) and
dead letters; every consumer is a durable pull consumer with explicit acks.
"""

from __future__ import annotations

import logging

from faststream.nats import JStream, NatsBroker
from nats.js import JetStreamContext
from nats.js.api import (
    ConsumerConfig,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError

from rag_common.config.settings import ServiceSettings
from rag_common.transport.recovery import layout_of
from rag_common.wire import subjects

log = logging.getLogger(__name__)

INGEST_JSTREAM = JStream(subjects.INGEST_STREAM, declare=False)
QUERY_JSTREAM = JStream(subjects.QUERY_STREAM, declare=False)
ASSESSMENT_JSTREAM = JStream(subjects.ASSESSMENT_STREAM, declare=False)


def stream_configs(settings: ServiceSettings) -> list[StreamConfig]:
    """The streams: durable ingest work, short-lived query stages, assessment jobs, and dead letters."""
    return [
        StreamConfig(
            name=subjects.INGEST_STREAM,
            subjects=[subjects.INGEST_SUBJECTS],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            num_replicas=settings.js_replicas,
            duplicate_window=120.0,
        ),
        StreamConfig(
            name=subjects.QUERY_STREAM,
            subjects=[subjects.QUERY_SUBJECTS],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.MEMORY,
            max_age=300.0,
            num_replicas=settings.js_replicas,
            duplicate_window=120.0,
            discard=DiscardPolicy.OLD,
        ),
        StreamConfig(
            name=subjects.ASSESSMENT_STREAM,
            subjects=[subjects.ASSESSMENT_SUBJECTS],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            max_age=24 * 3600.0,
            num_replicas=settings.js_replicas,
            duplicate_window=120.0,
        ),
        StreamConfig(
            name=subjects.DLQ_STREAM,
            subjects=[subjects.DLQ_SUBJECTS],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=settings.dlq_max_age_s,
            max_bytes=settings.dlq_max_bytes,
            discard=DiscardPolicy.OLD,
            num_replicas=settings.js_replicas,
        ),
    ]


async def ensure_streams(js: JetStreamContext, settings: ServiceSettings) -> None:
    """Create the streams, or bring an existing one to our configuration (idempotent)."""
    for config in stream_configs(settings):
        try:
            await js.add_stream(config=config)
        except BadRequestError:
            await js.update_stream(config=config)
    await drop_push_consumers(js)


async def drop_push_consumers(js: JetStreamContext) -> list[str]:
    """Delete push consumers left in our work-queue streams by an older version.

    Every consumer we create is a durable pull consumer; a push consumer of the same name would
    make the pull subscriber wait forever without an error. Nothing is lost: the messages stay in
    the stream and the pull consumer is created in its place.
    """
    dropped = []
    for stream in (subjects.INGEST_STREAM, subjects.QUERY_STREAM):
        for info in await js.consumers_info(stream):
            if info.config.deliver_subject and info.name:
                await js.delete_consumer(stream, info.name)
                log.warning("deleted push consumer %s/%s left by an older version", stream, info.name)
                dropped.append(f"{stream}/{info.name}")
    return dropped


def consumer_config(settings: ServiceSettings, *, ack_wait: float) -> ConsumerConfig:
    """Explicit acks, bounded redeliveries; retries are spaced by ``nak(delay)``.

    ``max_ack_pending`` is shared by every replica of the consumer, so it is sized for the most
    replicas the autoscaler may start (``max_replicas`` x ``concurrency``): a smaller limit would
    leave the replicas beyond it without work however long the queue grows.
    """
    return ConsumerConfig(ack_wait=ack_wait, max_deliver=settings.max_deliver, max_ack_pending=settings.max_ack_pending)


async def prepare_jetstream(broker: NatsBroker, settings: ServiceSettings) -> None:
    """Connect and declare the streams and consumers before subscribers bind to them.

    Their settings are updated; they are kept declared across NATS restarts
    (``rag_common.transport.recovery``).
    """
    await broker.connect()
    layout = layout_of(broker)
    if layout is None:
        await ensure_streams(broker.connection.jetstream(), settings)
    else:
        await layout.start(broker.connection.jetstream(), check_interval_s=settings.js_check_interval_s)
