"""The evaluator's handlers: a drafted answer in, its flags (``rag_evaluator.checks``) and the final
answer out; a drafted assessment in, its checked paper (``rag_evaluator.assessing``) out.

A class whose methods FastStream calls (``subscribe`` says on which subject and consumer), so a
test can call a handler directly with a message and see what it published.
"""

from __future__ import annotations

import asyncio
import json
import logging

from faststream.nats import NatsBroker
from opentelemetry.trace import Span, get_current_span
from prometheus_client import Counter

from rag_common.config.texts import collection_texts
from rag_common.store.answer_cache import AnswerCache, kept_counter
from rag_common.store.assessments import AssessmentMetrics, AssessmentStore, in_stage, register_assessment_stage
from rag_common.transport.consuming import register_query_stage
from rag_common.transport.publishing import publish_answer, publish_assessment
from rag_common.transport.service import register_ping
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects
from rag_common.wire.messages import FAILING_FLAGS, Evaluation, Flag, QueryAnswered, QueryDrafted
from rag_common.wire.messages.assessment import AssessmentDrafted, AssessmentItem, AssessmentRejected, AssessmentState
from rag_evaluator.assessing import Embed, check_items, failed, finish, regenerate
from rag_evaluator.checks import assess
from rag_evaluator.rewriting import apply_rewrite
from rag_evaluator.settings import EvaluatorSettings

log = logging.getLogger("rag.evaluator")


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


class EvaluatorHandlers:
    """What the evaluator's handlers need: settings, telemetry, the broker they publish with, and
    what start-up opens or loads (see ``create_app``). The collection's profile (terminology) comes
    with each drafted answer, as the router read it."""

    def __init__(self, settings: EvaluatorSettings, telemetry: ServiceTelemetry, broker: NatsBroker) -> None:
        self.settings, self.telemetry, self.broker = settings, telemetry, broker
        # Set at start-up, once connected (None until then, and where a test needs none of them):
        self.cache: AnswerCache | None = None  # with RAG_ANSWER_CACHE on
        self.assessments: AssessmentStore | None = None
        self.embed: Embed | None = None  # MiniLM, when its folder exists: near-duplicate stems
        registry = telemetry.registry
        self.flags_total = Counter(
            "rag_answer_flags_total", "Answers carrying each quality flag", ["flag"], registry=registry
        )
        self.flagged_total = Counter("rag_answers_flagged_total", "Answers with a failing flag", registry=registry)
        for name in Flag:  # every flag shows from the start, so the first one counts in increase()
            self.flags_total.labels(name)
        self.kept_total = kept_counter(registry)
        self.assessment_metrics = AssessmentMetrics(registry)

    async def on_drafted(self, drafted: QueryDrafted) -> None:
        """Flag the drafted answer, keep it in the answer cache when nothing is raised, and send the
        final answer to the waiting gateway (the one sender of final answers). An answer served
        from the cache goes on with the evaluation it was kept with."""
        if drafted.kept is not None:
            with self.telemetry.stage("evaluator") as timer:
                answered = QueryAnswered.of(drafted, drafted.kept)
            drafted.timings_ms["evaluator"] = timer.ms
            await publish_answer(self.broker, answered)
            return
        with self.telemetry.stage("evaluator") as timer:
            # The file's profile when the router did not send one.
            profile = drafted.profile or collection_texts(self.settings.collections_file, drafted.query.collection)
            evaluation = assess(drafted, profile.terminology)
            # On the message's own "process" span: no span of its own for a few milliseconds of checks.
            span = get_current_span()
            span.set_attribute("rag.flagged", evaluation.flagged)
            report_failures(drafted, evaluation, span)
        drafted.timings_ms["evaluator"] = timer.ms
        for name, raised in evaluation.flags.items():
            if raised:
                self.flags_total.labels(name).inc()
        if evaluation.flagged:
            self.flagged_total.inc()
        answered = QueryAnswered.of(drafted, evaluation)
        await self.keep(answered)
        await publish_answer(self.broker, answered)

    async def keep(self, answered: QueryAnswered) -> None:
        """Keep an unflagged answer in the answer cache before it leaves (the same question asked
        again right after finds it); a cache that cannot be written costs the answer nothing."""
        if self.cache is None or answered.retrieval.cache is None:
            return
        try:
            if await self.cache.keep(answered):
                self.kept_total.inc()
        except Exception as exc:
            log.warning("answer %s not kept in the answer cache: %r", answered.query.request_id, exc)

    def assessment_store(self) -> AssessmentStore | None:
        return self.assessments

    async def on_assessment_drafted(self, drafted: AssessmentDrafted) -> None:
        """Check every question; send the failed ones back once for another try, else store the paper."""
        job, jobs, metrics = drafted.assessment, self.assessments, self.assessment_metrics
        if jobs is not None:
            await jobs.update(job.id, in_stage("validating"))
        with self.telemetry.tracer.start_as_current_span("assessment_validation"):
            items = await asyncio.to_thread(
                check_items, drafted.items, self.embed, self.settings.near_duplicate_cosine, drafted.round
            )
        if job.rewrite is not None:  # one question the teacher asked to write again: no second pass
            await self.finish_rewrite(drafted, items, job.rewrite)
            return
        to_redo = [item for item in items if failed(item)]
        fresh = [
            i for i in items if i.question is not None and i.question.validation.regenerated == (drafted.round > 1)
        ]
        rejected = sum(1 for i in fresh if i.question is not None and not i.question.validation.valid)
        metrics.questions.labels("rejected").inc(rejected)
        if drafted.round == 1 and to_redo:
            metrics.questions.labels("regenerated").inc(len(to_redo))
            if jobs is not None:

                def regenerating(s: AssessmentState) -> None:
                    s.status, s.progress.stage = "generating", "regenerating"
                    # The questions written so far stay counted: the pass counts on from them.
                    s.progress.done, s.progress.total = len(items), len(items) + len(to_redo)
                    s.counts.rejected, s.counts.regenerated = rejected, len(to_redo)

                await jobs.update(job.id, regenerating)
            again = AssessmentRejected(assessment=job, items=regenerate(items), foils=drafted.foils, round=2)
            await publish_assessment(self.broker, again, subjects.ASSESSMENT_REJECTED, f"{job.id}:rejected:2")
            return
        dropped = len(to_redo)
        metrics.questions.labels("dropped").inc(dropped)
        metrics.assessments.labels("done").inc()
        if jobs is not None:

            def done(s: AssessmentState) -> None:
                finish(s, items, drafted.round, drafted.material)
                s.counts.rejected += rejected

            await jobs.update(job.id, done)
        log.info("assessment %s done: %d questions, %d dropped", job.id, len(items) - dropped, dropped)

    async def finish_rewrite(self, drafted: AssessmentDrafted, items: list[AssessmentItem], index: int) -> None:
        """The rewritten question into the stored paper, or the old one kept and why."""
        job, jobs = drafted.assessment, self.assessments
        self.assessment_metrics.assessments.labels("done").inc()
        if jobs is None:
            return
        edits: list[str] = []

        def rewritten(s: AssessmentState) -> None:
            edits.append(apply_rewrite(s, items, index))

        await jobs.update(job.id, rewritten)
        log.info("assessment %s: %s", job.id, edits[0] if edits and edits[0] else "rewrite already finished")


def subscribe(broker: NatsBroker, handlers: EvaluatorHandlers) -> None:
    """The evaluator's subscriptions: its query stage, its readiness ping, its assessment stage."""
    settings, telemetry = handlers.settings, handlers.telemetry
    register_query_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.QUERY_DRAFTED,
        consumer=subjects.EVALUATOR_CONSUMER,
        work=handlers.on_drafted,
    )
    register_ping(broker, "evaluator")
    register_assessment_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.ASSESSMENT_DRAFTED,
        consumer=subjects.EVALUATOR_ASSESSMENT_CONSUMER,
        work=handlers.on_assessment_drafted,
        store=handlers.assessment_store,
        metrics=handlers.assessment_metrics,
    )
