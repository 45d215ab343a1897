"""Evaluator service: attaches quality flags to every answer and hands it to the waiting gateway."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker
from opentelemetry.trace import Span, get_current_span
from prometheus_client import Counter

from rag_common.config.texts import check_collections_file
from rag_common.store.answer_cache import AnswerCache, kept_counter, open_answer_cache_bucket
from rag_common.store.assessments import AssessmentStore
from rag_common.store.buckets import open_assessments_bucket
from rag_common.store.embedding import get_embedder
from rag_common.store.profiles import ProfileBook, open_profiles_bucket
from rag_common.transport.broker import make_broker
from rag_common.transport.consuming import register_query_stage
from rag_common.transport.publishing import publish_answer
from rag_common.transport.service import create_service, register_ping
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import FAILING_FLAGS, Evaluation, Flag, QueryAnswered, QueryDrafted
from rag_evaluator.assessing import register_assessments
from rag_evaluator.checks import evaluate
from rag_evaluator.settings import EvaluatorSettings

log = logging.getLogger("rag.evaluator")


def assess(drafted: QueryDrafted, terminology: Mapping[str, Sequence[str]] | None = None) -> Evaluation:
    """Flags for one answer. A canned greeting is not a document answer: it needs no citation.

    ``terminology``: the collection profile's preferred term -> rival terms."""
    if drafted.route.tier == "greeting" and not drafted.suspicions:
        return Evaluation(flags={flag: False for flag in Flag}, details={}, flagged=False)
    draft, retrieval = drafted.draft, drafted.retrieval
    return evaluate(
        draft.answer,
        retrieval.passages,
        refused=draft.refused,
        question=retrieval.rewritten_question or drafted.query.question,
        suspicions=drafted.suspicions,
        low_confidence=retrieval.low_confidence,
        refusal_reason=draft.refusal_reason,
        terminology=terminology,
        preface=draft.preface,
        model_answer_rejected=draft.model_answer_rejected,
    )


def report_failures(drafted: QueryDrafted, evaluation: Evaluation, span: Span) -> None:
    """One structured ``EVAL_FAIL`` log line and one ``gen_ai.evaluation.result`` span event per failing flag.

    The event follows the OpenTelemetry GenAI semantic conventions, so any tracing back end shows
    the failed check on the answer's own trace.
    """
    for name in Flag:
        if name not in FAILING_FLAGS or not evaluation.raised(name):
            continue
        explanation = json.dumps(evaluation.details.get(name, ""), default=str, ensure_ascii=False)
        log.warning(
            "EVAL_FAIL %s",
            json.dumps(
                {
                    "event": "EVAL_FAIL",
                    "flag": name,
                    "request_id": drafted.query.request_id,
                    "trace_id": drafted.query.trace_id,
                    "collection": drafted.query.collection,
                    "model": drafted.draft.model,
                    "details": evaluation.details.get(name),
                },
                default=str,
                ensure_ascii=False,
            ),
        )
        span.add_event(
            "gen_ai.evaluation.result",
            {
                "gen_ai.evaluation.name": name,
                "gen_ai.evaluation.score.label": "fail",
                "gen_ai.evaluation.score.value": 1.0,
                "gen_ai.evaluation.explanation": explanation[:1000],
                "gen_ai.response.id": drafted.query.request_id,
            },
        )


def build_broker(
    settings: EvaluatorSettings,
    telemetry: ServiceTelemetry,
    state: dict[str, Any] | None = None,
    profiles: ProfileBook | None = None,
) -> NatsBroker:
    """``state``: the assessment store, embedder and answer cache once started; ``profiles``: where collection
    profiles (terminology) are read (default: the collections file)."""
    state = state if state is not None else {}
    broker = make_broker(settings, telemetry)
    book = profiles or ProfileBook(settings.collections_file)
    flags_total = Counter(
        "rag_answer_flags_total", "Answers carrying each quality flag", ["flag"], registry=telemetry.registry
    )
    flagged_total = Counter("rag_answers_flagged_total", "Answers with a failing flag", registry=telemetry.registry)
    for name in Flag:  # every flag shows from the start, so the first one counts in increase()
        flags_total.labels(name)
    kept_total = kept_counter(telemetry.registry)

    async def on_drafted(drafted: QueryDrafted) -> None:
        with telemetry.stage("evaluator") as timer:
            profile = await book.lookup(drafted.query.collection)
            evaluation = assess(drafted, profile.terminology)
            # On the message's own "process" span: no span of its own for a few milliseconds of checks.
            span = get_current_span()
            span.set_attribute("rag.flagged", evaluation.flagged)
            report_failures(drafted, evaluation, span)
        drafted.timings_ms["evaluator"] = timer.ms
        for name, raised in evaluation.flags.items():
            if raised:
                flags_total.labels(name).inc()
        if evaluation.flagged:
            flagged_total.inc()
        answered = QueryAnswered.of(drafted, evaluation)
        await keep(state.get("cache"), answered)
        await publish_answer(broker, answered)

    async def keep(cache: AnswerCache | None, answered: QueryAnswered) -> None:
        """Keep an unflagged answer in the answer cache before it leaves (the same question asked
        again right after finds it); a cache that cannot be written costs the answer nothing."""
        if cache is None or answered.retrieval.cache is None:
            return
        try:
            if await cache.keep(answered):
                kept_total.inc()
        except Exception as exc:
            log.warning("answer %s not kept in the answer cache: %r", answered.query.request_id, exc)

    register_query_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.QUERY_DRAFTED,
        consumer=subjects.EVALUATOR_CONSUMER,
        model=QueryDrafted,
        work=on_drafted,
    )
    register_ping(broker, "evaluator")
    register_assessments(broker, settings, telemetry, state)
    return broker


def create_app(settings: EvaluatorSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("evaluator", settings=settings)
    state: dict[str, Any] = {}
    profiles = ProfileBook(settings.collections_file)
    broker = build_broker(settings, telemetry, state, profiles)

    async def load() -> None:
        check_collections_file(settings.collections_file)
        # MiniLM embeds assessment stems for the near-duplicate check (shared in the dev runner).
        # Without its folder the check compares the quoted sentences only, and says so.
        if not settings.resolved_model_dir.is_dir():
            log.warning(
                "no embedding model at %s (RAG_MODEL_DIR): assessment near-duplicates are found by shared "
                "sentences only, not by stem similarity",
                settings.resolved_model_dir,
            )
            return
        embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        state["embed"] = embedder.embed_dense

    async def connected() -> None:
        profiles.kv = await open_profiles_bucket(broker, settings)
        state["assessments"] = AssessmentStore(await open_assessments_bucket(broker, settings))
        if settings.answer_cache:
            state["cache"] = AnswerCache(await open_answer_cache_bucket(broker, settings, settings), settings)

    return create_service(broker, settings, telemetry, load=load, connected=connected)
