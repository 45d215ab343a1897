"""JetStream backlog as Prometheus gauges: pending and ack-pending per consumer, messages per stream.

The gateway polls these every few seconds (``RAG_GATEWAY_STATS_INTERVAL_S``). Every gateway
replica reports the same numbers, so dashboards and alerts take ``max by (stream, consumer)``.
"""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from rag_common.wire import subjects

log = logging.getLogger(__name__)

CONSUMERS: dict[str, tuple[str, ...]] = {
    subjects.INGEST_STREAM: (subjects.INGEST_CONSUMER, subjects.INGEST_DELETE_CONSUMER),
    subjects.QUERY_STREAM: (
        subjects.ROUTER_CONSUMER,
        subjects.RETRIEVER_CONSUMER,
        subjects.GENERATOR_CONSUMER,
        subjects.EVALUATOR_CONSUMER,
    ),
}
STREAMS = (subjects.INGEST_STREAM, subjects.QUERY_STREAM, subjects.DLQ_STREAM)


class JetStreamStats:
    """Gauges for every known stream and consumer, created at 0 and refreshed by ``poll``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.pending = Gauge(
            "rag_consumer_pending_messages",
            "Messages in the stream not yet delivered to the consumer",
            ["stream", "consumer"],
            registry=registry,
        )
        self.ack_pending = Gauge(
            "rag_consumer_ack_pending_messages",
            "Messages delivered to the consumer and not yet acknowledged",
            ["stream", "consumer"],
            registry=registry,
        )
        self.redelivered = Gauge(
            "rag_consumer_redelivered_messages",
            "Messages delivered more than once and not yet acknowledged",
            ["stream", "consumer"],
            registry=registry,
        )
        self.max_ack_pending = Gauge(
            "rag_consumer_max_ack_pending",
            "The consumer's max_ack_pending (unacknowledged messages allowed across all replicas)",
            ["stream", "consumer"],
            registry=registry,
        )
        self.stream_messages = Gauge(
            "rag_stream_messages",
            "Messages stored in the stream (RAG_DLQ: the dead letters)",
            ["stream"],
            registry=registry,
        )
        self.up = Gauge(
            "rag_jetstream_stats_up", "1 when the last poll of JetStream succeeded, else 0", registry=registry
        )
        for stream, consumers in CONSUMERS.items():
            for consumer in consumers:
                for gauge in (self.pending, self.ack_pending, self.redelivered, self.max_ack_pending):
                    gauge.labels(stream, consumer).set(0)
        for stream in STREAMS:
            self.stream_messages.labels(stream).set(0)

    async def poll(self, js: Any) -> None:
        """Read stream and consumer info once (raises if JetStream does not answer)."""
        for stream in STREAMS:
            info = await js.stream_info(stream)
            self.stream_messages.labels(stream).set(info.state.messages)
        for stream in CONSUMERS:
            for consumer in await js.consumers_info(stream):
                name = consumer.name or ""
                self.pending.labels(stream, name).set(consumer.num_pending or 0)
                self.ack_pending.labels(stream, name).set(consumer.num_ack_pending or 0)
                self.redelivered.labels(stream, name).set(consumer.num_redelivered or 0)
                self.max_ack_pending.labels(stream, name).set(consumer.config.max_ack_pending or 0)
