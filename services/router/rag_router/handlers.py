"""The router's handler: a question in, its routing decision (``rag_router.routing``) out.

A class whose methods FastStream calls (``subscribe`` says on which subject and consumer), so a
test can call a handler directly with a message and see what it published.
"""

from __future__ import annotations

from faststream.nats import NatsBroker
from prometheus_client import Counter

from rag_common.store.profiles import ProfileBook
from rag_common.text.injection import QUESTION_KINDS
from rag_common.transport.consuming import register_query_stage
from rag_common.transport.publishing import publish_stage
from rag_common.transport.service import register_ping
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects
from rag_common.wire.messages import QueryDrafted, QueryRequested
from rag_router.routing import decide
from rag_router.settings import RouterSettings


class RouterHandlers:
    """What the router's handler needs, given once: settings, telemetry, the broker it publishes
    with and the collection profiles (``profiles.kv`` is opened at start-up)."""

    def __init__(
        self, settings: RouterSettings, telemetry: ServiceTelemetry, broker: NatsBroker, profiles: ProfileBook
    ) -> None:
        self.settings, self.telemetry, self.broker, self.profiles = settings, telemetry, broker, profiles
        self.injections = Counter(
            "rag_injection_blocked_total",
            "Questions (or the attacking part of a question) refused as prompt-injection attempts, by kind",
            ["kind"],
            registry=telemetry.registry,
        )
        for kind in QUESTION_KINDS:
            self.injections.labels(kind)

    async def on_requested(self, requested: QueryRequested) -> None:
        """Route the question: to retrieval with its tier, or straight to the evaluator as a drafted
        answer (a greeting, or a refused injection attempt). The collection's profile is read here,
        once per question; the decision carries it to the later stages."""
        with self.telemetry.stage("router") as timer:
            texts = await self.profiles.lookup(requested.query.collection)
            decision = decide(requested.query, self.settings, texts)
        decision.timings_ms["router"] = timer.ms
        attack = decision.route.signals if decision.route.tier == "blocked" else decision.route.attack_dropped
        for kind in attack:
            self.injections.labels(kind).inc()
        next_subject = subjects.QUERY_DRAFTED if isinstance(decision, QueryDrafted) else subjects.QUERY_ROUTED
        await publish_stage(self.broker, decision, next_subject)


def subscribe(broker: NatsBroker, handlers: RouterHandlers) -> None:
    """The router's subscriptions: its query stage and its readiness ping."""
    register_query_stage(
        broker,
        handlers.settings,
        handlers.telemetry,
        subject=subjects.QUERY_REQUESTED,
        consumer=subjects.ROUTER_CONSUMER,
        work=handlers.on_requested,
    )
    register_ping(broker, "router")
