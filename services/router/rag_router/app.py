"""Router service: scores each question and picks a model tier; greetings skip the pipeline."""

from __future__ import annotations

import re

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common import subjects
from rag_common.broker import make_broker
from rag_common.messages import QueryDrafted, QueryRequested, QueryRouted, Route, advance
from rag_common.stage import prepare_jetstream, publish_stage, register_ping, register_query_stage
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_router.scoring import is_greeting, score_query
from rag_router.settings import RouterSettings

THANKS = re.compile(r"\b(thanks|thank you|thx|ty|cheers)\b", re.IGNORECASE)


def decide(query: QueryRequested, settings: RouterSettings) -> QueryRouted | QueryDrafted:
    """The routing decision for one question (pure): a canned reply or a scored tier."""
    if is_greeting(query.question):
        reply = settings.thanks_reply if THANKS.search(query.question) else settings.greeting_reply
        route = Route(tier="greeting", model="canned", reason="greeting: answered without retrieval or a model")
        return advance(QueryDrafted, query, route=route, canned_answer=reply, answer=reply, model="canned")
    score = score_query(query.question)
    route = Route(
        tier=score.tier(settings.threshold),  # type: ignore[arg-type]
        score=score.score,
        signals=score.signals,
        reason=score.reason(settings.threshold),
    )
    return advance(QueryRouted, query, route=route)


def build_broker(settings: RouterSettings, telemetry: ServiceTelemetry) -> NatsBroker:
    broker = make_broker(settings, telemetry)

    async def on_requested(query: QueryRequested) -> None:
        with telemetry.stage("router") as timer:
            decision = decide(query, settings)
        decision.timings_ms["router"] = timer.ms
        next_subject = subjects.QUERY_DRAFTED if isinstance(decision, QueryDrafted) else subjects.QUERY_ROUTED
        await publish_stage(broker, decision, next_subject)

    register_query_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.QUERY_REQUESTED,
        consumer=subjects.ROUTER_CONSUMER,
        model=QueryRequested,
        work=on_requested,
    )
    register_ping(broker, "router")
    return broker


def create_app(settings: RouterSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("router")
    broker = build_broker(settings, telemetry)
    app = FastStream(broker)

    @app.on_startup
    async def startup() -> None:
        await prepare_jetstream(broker, settings)
        telemetry.serve_metrics(settings.metrics_host, settings.metrics_port)

    return app
