"""Router service: scores each question and picks a model tier; greetings and injection attempts skip
the pipeline. A question that mixes an attack with a real request goes on with the request alone."""

from __future__ import annotations

import asyncio
import re

from faststream import FastStream
from faststream.nats import NatsBroker
from prometheus_client import Counter

from rag_common.config.texts import CollectionTexts, blocked_reply, check_collections_file, collection_texts
from rag_common.store.profiles import ProfileBook, open_profiles_bucket
from rag_common.text.injection import QUESTION_KINDS, QuestionVerdict, screen_question, warm
from rag_common.transport.broker import make_broker
from rag_common.transport.consuming import register_query_stage
from rag_common.transport.publishing import publish_stage
from rag_common.transport.service import create_service, register_ping
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import Draft, Query, QueryDrafted, QueryRequested, QueryRouted, Route
from rag_router.scoring import is_greeting, score_query
from rag_router.settings import RouterSettings

THANKS = re.compile(r"\b(thanks|thank you|thx|ty|cheers)\b", re.IGNORECASE)


def blocked(query: Query, verdict: QuestionVerdict, texts: CollectionTexts) -> QueryDrafted:
    """The collection's blocked reply for a question that tries prompt injection: nothing retrieved,
    no model called, nothing of the question echoed; the kinds that fired are the route's signals."""
    kinds = ", ".join(verdict.kinds)
    reply = blocked_reply(texts)
    route = Route(
        tier="blocked",
        model="canned",
        signals=dict.fromkeys(verdict.kinds, 1),
        reason=f"injection suspected ({kinds}): refused without retrieval or a model",
    )
    return QueryDrafted(
        query=query,
        route=route,
        draft=Draft(answer=reply, model="canned", refused=True, refusal_reason=f"injection suspected: {kinds}"),
        suspicions=[f"question: {kinds}"],
    )


def decide(query: Query, settings: RouterSettings, texts: CollectionTexts | None = None) -> QueryRouted | QueryDrafted:
    """The routing decision for one question (pure): a refusal, a canned reply or a scored tier.
    ``texts``: the collection's effective profile (``ProfileBook``); without it, the file's.

    A question that carries an attack beside a real request goes on with the request alone: the
    attacking parts never reach retrieval or a model, and the answer opens with their refusal.
    """
    texts = texts or collection_texts(settings.collections_file, query.collection)
    screened = screen_question(query.question)
    if screened.request is None or (screened.mixed and is_greeting(screened.request)):
        return blocked(query, screened.verdict, texts)
    dropped: list[str] = []
    suspicions: list[str] = []
    if screened.mixed:
        dropped = list(screened.verdict.kinds)
        suspicions = [f"question: {', '.join(dropped)} (that part refused, the rest answered)"]
        query = query.model_copy(update={"question": screened.request})
    if is_greeting(query.question):
        reply = texts.thanks if THANKS.search(query.question) else texts.greeting
        route = Route(tier="greeting", model="canned", reason="greeting: answered without retrieval or a model")
        return QueryDrafted(query=query, route=route, draft=Draft(answer=reply, model="canned"))
    score = score_query(query.question)
    reason = score.reason(settings.threshold)
    if dropped:
        reason = f"injection suspected ({', '.join(dropped)}) in part of the question: that part refused; {reason}"
    route = Route(
        tier=score.tier(settings.threshold),
        score=score.score,
        signals=score.signals,
        reason=reason,
        attack_dropped=dropped,
    )
    return QueryRouted(query=query, route=route, suspicions=suspicions)


def build_broker(
    settings: RouterSettings, telemetry: ServiceTelemetry, profiles: ProfileBook | None = None
) -> NatsBroker:
    """``profiles``: where collection profiles are read (default: the collections file alone)."""
    broker = make_broker(settings, telemetry)
    book = profiles or ProfileBook(settings.collections_file)
    injections = Counter(
        "rag_injection_blocked_total",
        "Questions (or the attacking part of a question) refused as prompt-injection attempts, by kind",
        ["kind"],
        registry=telemetry.registry,
    )
    for kind in QUESTION_KINDS:
        injections.labels(kind)

    async def on_requested(requested: QueryRequested) -> None:
        with telemetry.stage("router") as timer:
            texts = await book.lookup(requested.query.collection)
            decision = decide(requested.query, settings, texts)
        decision.timings_ms["router"] = timer.ms
        attack = decision.route.signals if decision.route.tier == "blocked" else decision.route.attack_dropped
        for kind in attack:
            injections.labels(kind).inc()
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
    telemetry = telemetry or setup_telemetry("router", settings=settings)
    profiles = ProfileBook(settings.collections_file)

    async def load() -> None:
        check_collections_file(settings.collections_file)
        await asyncio.to_thread(warm)  # the lookalike letters' table, before the first question

    async def connected() -> None:
        profiles.kv = await open_profiles_bucket(broker, settings)

    broker = build_broker(settings, telemetry, profiles)
    return create_service(broker, settings, telemetry, load=load, connected=connected)
