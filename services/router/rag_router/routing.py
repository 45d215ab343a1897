"""The router's decision for one question (pure): a refusal, a canned reply or a scored tier.

Greetings and injection attempts skip the pipeline; a question that mixes an attack with a real
request goes on with the request alone.
"""

from __future__ import annotations

import re

from rag_common.config.texts import CollectionTexts, blocked_reply, collection_texts
from rag_common.text.injection import QuestionVerdict, find_instruction_spans, screen_question
from rag_common.wire.messages import Draft, Query, QueryDrafted, QueryRouted, Route
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
        profile=texts,
    )


def decide(query: Query, settings: RouterSettings, texts: CollectionTexts | None = None) -> QueryRouted | QueryDrafted:
    """The routing decision for one question (pure): a refusal, a canned reply or a scored tier.
    ``texts``: the collection's effective profile (``ProfileBook``); without it, the file's. The
    decision carries it (``StageMessage.profile``): no later stage reads the profile again.

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
        return QueryDrafted(query=query, route=route, draft=Draft(answer=reply, model="canned"), profile=texts)
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
    # The selected text is the caller's too: checked here, once, and masked by the generator.
    selection = [(s.start, s.end) for s in find_instruction_spans(query.selected_text)] if query.selected_text else None
    return QueryRouted(query=query, route=route, suspicions=suspicions, profile=texts, selection_spans=selection)
