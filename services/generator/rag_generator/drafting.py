"""Drafting an answer: from the retrieved passages through LiteLLM, or extractively, its text
streamed to the waiting gateway as it is written. The handler around it is ``rag_generator.handlers``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from faststream.nats import NatsBroker
from prometheus_client import Counter, Histogram

from rag_common.config.texts import CollectionTexts, collection_texts, with_contact
from rag_common.text.citations import cited_numbers
from rag_common.text.conflicts import find_conflicts
from rag_common.text.injection import check_output, strip_spans
from rag_common.transport.publishing import publish_delta
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire.messages import AnswerDelta, Draft, Query, QueryDrafted, QueryRetrieved, Usage, new_id
from rag_generator.citations import citations_for, is_refusal
from rag_generator.extractive import ExtractiveReply, extractive_reply
from rag_generator.guard import StreamGuard
from rag_generator.llm import StopStream, stream_completion
from rag_generator.prompting import build_messages, new_salt
from rag_generator.relevance import SentenceScorer
from rag_generator.settings import GeneratorSettings

EXTRACTIVE = "extractive"
LLM_REFUSAL_REASON = "the model found no answer in the passages"
# What the stream says when the model's answer is withheld; the answer quoted from the documents follows.
WITHHELD_NOTICE = "[The model's answer was withheld: {reason}. This answer quotes the documents instead.]"

log = logging.getLogger(__name__)


DeltaSink = Callable[[Query, AnswerDelta], Awaitable[None]]

# The checks a model's answer must pass before it is shown: the stream guard and output check
# (no tag, salt, prompt or instruction-like text) and the citation check (it cites passages that exist).
CHECKS = ("output", "citation")


def output_problem(answer: str, system_prompt: str, salt: str, refusal: str) -> str | None:
    """Why a model's answer may not be shown, in words that quote none of it (or of the prompt)."""
    # The refusal text is in the system prompt on purpose: saying it is no leak.
    leaks = check_output(answer.replace(refusal, " "), system_prompt=system_prompt.replace(refusal, " "), salt=salt)
    return "; ".join(dict.fromkeys(leak.split(":")[0] for leak in leaks)) or None


def citation_problem(answer: str, passages: Sequence[int]) -> str | None:
    """Why a model's answer fails the citation check: it cites nothing, or a passage that does not exist."""
    numbers = cited_numbers(answer)
    if not numbers:
        return "it cites no passage"
    unknown = sorted(set(numbers) - set(passages))
    if unknown:
        return f"it cites passage {', '.join(f'[{n}]' for n in unknown)}, which does not exist"
    return None


LLM_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)


class LLMMetrics:
    """Tokens, cost, latency and errors per model; every configured model starts at 0."""

    def __init__(self, telemetry: ServiceTelemetry, models: Sequence[str]) -> None:
        registry = telemetry.registry
        self.tokens = Counter(
            "rag_llm_tokens_total", "LLM tokens by model and direction", ["model", "direction"], registry=registry
        )
        self.cost = Counter(
            "rag_llm_cost_usd_total",
            "LLM cost in USD by model (LiteLLM prices)",
            ["model"],
            registry=registry,
        )
        self.requests = Counter(
            "rag_llm_requests_total",
            "LLM calls by model and outcome",
            ["model", "outcome"],
            registry=registry,
        )
        self.rejected = Counter(
            "rag_llm_answers_rejected_total",
            "Model answers withheld and replaced by the extractive answer, by model and failed check",
            ["model", "check"],
            registry=registry,
        )
        self.seconds = Histogram(
            "rag_llm_request_duration_seconds",
            "LLM call latency (the whole stream) by model",
            ["model"],
            buckets=LLM_BUCKETS,
            registry=registry,
        )
        for model in models:
            self.declare(model)

    def declare(self, model: str) -> None:
        for direction in ("input", "output"):
            self.tokens.labels(model, direction)
        self.cost.labels(model)
        for outcome in ("ok", "error"):
            self.requests.labels(model, outcome)
        for check in CHECKS:
            self.rejected.labels(model, check)
        self.seconds.labels(model)


class Generator:
    """Drafts answers; token deltas go to the waiting gateway through ``broker``, when its caller
    streams (``Query.stream``: POST /v1/query waits for the final answer alone).

    ``on_delta`` replaces that publish (e.g. the benchmarks compose the stages in-process, with
    no broker); by default deltas are published exactly as before.
    """

    def __init__(
        self,
        settings: GeneratorSettings,
        broker: NatsBroker | None,
        telemetry: ServiceTelemetry,
        on_delta: DeltaSink | None = None,
    ) -> None:
        if on_delta is None:
            if broker is None:
                raise ValueError("Generator needs a broker to publish deltas, or an on_delta callback")
            on_delta = partial(publish_delta, broker)
        self.settings = settings
        self.broker = broker
        self.telemetry = telemetry
        self.on_delta = on_delta
        # The embedding model ranks extractive sentences without stored scores; set at start-up (None: not loaded).
        self.scorer: SentenceScorer | None = None
        self.llm_metrics = LLMMetrics(telemetry, settings.configured_models())
        self.model_scorings = Counter(
            "rag_generator_sentence_model_runs_total",
            "extractive answers whose sentences the embedding model scored (no stored similarities)",
            registry=telemetry.registry,
        )

    def profile_of(self, retrieved: QueryRetrieved) -> CollectionTexts:
        """The collection's profile for its refusal, as the router read it (file, then the admin API's
        override); the file's when the router did not send one."""
        if retrieved.profile is not None:
            return retrieved.profile
        return collection_texts(self.settings.collections_file, retrieved.query.collection)

    def _model_scorer(self) -> SentenceScorer | None:
        """The model, counted, when the settings let it rank sentences (else words or stored scores alone)."""
        scorer = self.scorer
        if scorer is None or not self.settings.sentence_scoring or self.settings.sentence_fallback != "model":
            return None

        def counted(question: str, sentences: Sequence[str]) -> Sequence[float]:
            self.model_scorings.inc()
            return scorer(question, sentences)

        return counted

    def extract(self, retrieved: QueryRetrieved) -> ExtractiveReply:
        """The extractive answer: planted instructions never quoted, disagreements said in words."""
        passages = retrieved.retrieval.passages
        excluded = {p.n: p.injection_spans for p in passages if p.injection_spans}
        masked = [
            p.model_copy(update={"text": strip_spans(p.text, p.injection_spans)}) if p.injection_spans else p
            for p in passages
        ]
        settings = self.settings
        use_stored = settings.sentence_scoring and settings.stored_sentence_scores
        return extractive_reply(
            retrieved.retrieval.rewritten_question or retrieved.query.question,
            passages,
            max_sentences=settings.extractive_sentences,
            scorer=self._model_scorer(),
            max_scored=settings.scored_sentences,
            conflicts=find_conflicts(masked),
            excluded=excluded,
            stored=retrieved.retrieval.sentence_scores if use_stored else None,
        )

    async def draft(self, retrieved: QueryRetrieved) -> QueryDrafted:
        query, retrieval = retrieved.query, retrieved.retrieval
        attempt = new_id()
        seq = 0

        async def emit(text: str) -> None:
            nonlocal seq
            if not query.stream:  # the caller waits for the final answer only
                return
            await self.on_delta(query, AnswerDelta(request_id=query.request_id, attempt=attempt, seq=seq, text=text))
            seq += 1

        route = retrieved.route
        usage = Usage()
        texts = self.profile_of(retrieved)
        refusal = with_contact(texts.refusal, texts)  # the support contact, said in every refusal
        refused, reason = retrieval.refused, retrieval.refusal_reason
        suspicions = list(retrieved.suspicions)
        rejected: str | None = None
        # A question whose attacking part the router dropped: its refusal opens the answer.
        preface = f"{texts.blocked}\n\n" if route.attack_dropped else ""
        if preface:
            await emit(preface)
        if retrieval.refused or not retrieval.passages:
            answer, model = refusal, "none"
            refused, reason = True, reason or "no passages"
            await emit(answer)
        else:
            model_name = self.settings.model_for(route.tier)
            if model_name is None:
                reply, model = await asyncio.to_thread(self.extract, retrieved), EXTRACTIVE
                answer = reply.text
                if not reply.answered:
                    # The passages passed the relevance threshold on the collection's own words, but
                    # none holds what was asked: the collection's refusal, not a near miss.
                    answer, refused, reason = refusal, True, f"not in the documents: {reply.reason}"
                for line in answer.splitlines(keepends=True):
                    await emit(line)
            else:
                question = retrieval.rewritten_question or query.question
                salt = new_salt()
                messages = build_messages(
                    question, retrieval.passages, salt, query.selected_text, refusal, retrieved.selection_spans
                )
                system_prompt = messages[0]["content"]
                guard = StreamGuard(salt, system_prompt.replace(refusal, " "))

                async def guarded(token: str) -> None:
                    # Nothing that could be a tag, the salt or the prompt leaves before it is known not to be.
                    shown = guard.feed(token)
                    if shown:
                        await emit(shown)
                    if guard.aborted is not None:
                        raise StopStream

                started = time.perf_counter()
                metrics = self.llm_metrics
                with self.telemetry.tracer.start_as_current_span("llm.completion") as span:
                    span.set_attribute("llm.model", model_name)
                    try:
                        completion = await stream_completion(self.settings, model_name, messages, guarded)
                    except Exception:
                        metrics.requests.labels(model_name, "error").inc()
                        metrics.seconds.labels(model_name).observe(time.perf_counter() - started)
                        raise
                    span.set_attribute("llm.output_tokens", completion.usage.output_tokens)
                elapsed = time.perf_counter() - started
                metrics.requests.labels(completion.model, "ok").inc()
                metrics.seconds.labels(completion.model).observe(elapsed)
                metrics.tokens.labels(completion.model, "input").inc(completion.usage.input_tokens)
                metrics.tokens.labels(completion.model, "output").inc(completion.usage.output_tokens)
                metrics.cost.labels(completion.model).inc(completion.usage.cost_usd)
                retrieved.timings_ms["llm"] = round(elapsed * 1000, 3)
                answer, model, usage = completion.text.strip(), completion.model, completion.usage
                check, rejected = "output", guard.aborted or output_problem(answer, system_prompt, salt, refusal)
                if rejected is None and is_refusal(answer, refusal):
                    refused, reason = True, LLM_REFUSAL_REASON
                elif rejected is None:
                    check, rejected = "citation", citation_problem(answer, [p.n for p in retrieval.passages])
                if rejected is None:
                    await emit(guard.finish())
                else:
                    # A model's bad answer is no attack: the documents answer instead, and the stream says so.
                    metrics.rejected.labels(completion.model, check).inc()
                    log.warning("model answer withheld (%s check): %s", check, rejected)
                    await emit(f"\n\n{WITHHELD_NOTICE.format(reason=rejected)}\n\n")
                    reply, model = await asyncio.to_thread(self.extract, retrieved), EXTRACTIVE
                    answer = reply.text
                    if not reply.answered:
                        answer, refused, reason = refusal, True, f"not in the documents: {reply.reason}"
                    for line in answer.splitlines(keepends=True):
                        await emit(line)
        route = route.model_copy(update={"model": model})
        draft = Draft(
            answer=preface + answer,
            model=model,
            cited=[] if refused else [p.n for p in citations_for(answer, retrieval.passages)],
            usage=usage,
            refused=refused,
            refusal_reason=reason,
            preface=preface,
            model_answer_rejected=rejected,
        )
        return QueryDrafted(
            query=query,
            route=route,
            suspicions=suspicions,
            timings_ms=retrieved.timings_ms,
            profile=retrieved.profile,
            # The sentence scores were for this stage only: the next hops need not carry them.
            retrieval=retrieval.model_copy(update={"sentence_scores": {}}) if retrieval.sentence_scores else retrieval,
            draft=draft,
        )
