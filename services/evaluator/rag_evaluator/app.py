"""Evaluator service: attaches quality flags to every answer and hands it to the waiting gateway."""

from __future__ import annotations

import json
import logging

from faststream import FastStream
from faststream.nats import NatsBroker
from prometheus_client import Counter

from rag_common import subjects
from rag_common.broker import make_broker
from rag_common.messages import QueryAnswer, QueryDrafted
from rag_common.stage import prepare_jetstream, register_ping, register_query_stage
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_evaluator.checks import FLAG_NAMES, Evaluation, PassageRef, evaluate
from rag_evaluator.settings import EvaluatorSettings

log = logging.getLogger("rag.evaluator")


def assess(drafted: QueryDrafted) -> Evaluation:
    """Flags for one answer. A canned greeting is not a document answer: it needs no citation."""
    if drafted.route.tier == "greeting":
        return Evaluation(flags=dict.fromkeys(FLAG_NAMES, False), details={}, flagged=False)
    refs = [PassageRef(n=p.n, source=p.source, section=p.section, page=p.page, text=p.text) for p in drafted.passages]
    return evaluate(drafted.answer, refs, refused=drafted.refused, question=drafted.question)


def final_answer(drafted: QueryDrafted, evaluation: Evaluation) -> QueryAnswer:
    details = dict(evaluation.details)
    if drafted.refused and drafted.refusal_reason:
        details["refused"] = drafted.refusal_reason
    return QueryAnswer(
        request_id=drafted.request_id,
        answer=drafted.answer,
        model=drafted.model,
        citations=drafted.citations,
        passages=drafted.passages,
        route=drafted.route,
        flags=evaluation.flags,
        flag_details=details,
        flagged=evaluation.flagged,
        usage=drafted.usage,
        timings_ms=drafted.timings_ms,
        started_at=drafted.started_at,
        trace_id=drafted.trace_id,
        collection=drafted.collection,
        session_id=drafted.session_id,
        rewritten_question=drafted.rewritten_question,
    )


def build_broker(settings: EvaluatorSettings, telemetry: ServiceTelemetry) -> NatsBroker:
    broker = make_broker(settings, telemetry)
    flags_total = Counter(
        "rag_answer_flags_total", "Answers carrying each quality flag", ["flag"], registry=telemetry.registry
    )
    flagged_total = Counter("rag_answers_flagged_total", "Answers with a failing flag", registry=telemetry.registry)

    async def on_drafted(drafted: QueryDrafted) -> None:
        with telemetry.stage("evaluator") as timer:
            evaluation = assess(drafted)
        drafted.timings_ms["evaluator"] = timer.ms
        answer = final_answer(drafted, evaluation)
        for name, raised in evaluation.flags.items():
            if raised:
                flags_total.labels(name).inc()
        if evaluation.flagged:
            flagged_total.inc()
            log.warning(
                json.dumps(
                    {
                        "event": "answer_flagged",
                        "request_id": drafted.request_id,
                        "trace_id": drafted.trace_id,
                        "flags": [k for k, v in evaluation.flags.items() if v],
                        "details": evaluation.details,
                    },
                    default=str,
                )
            )
        await broker.publish(answer, subjects.answer_subject(drafted.gateway_id, drafted.request_id, "final"))

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
    return broker


def create_app(settings: EvaluatorSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("evaluator")
    broker = build_broker(settings, telemetry)
    app = FastStream(broker)

    @app.on_startup
    async def startup() -> None:
        await prepare_jetstream(broker, settings)
        telemetry.serve_metrics(settings.metrics_host, settings.metrics_port)

    return app
