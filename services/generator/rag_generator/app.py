"""Generator service: answers from the retrieved passages through LiteLLM, or extractively."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common import subjects
from rag_common.broker import make_broker
from rag_common.messages import AnswerDelta, QueryDrafted, QueryRetrieved, Usage, advance, new_id
from rag_common.stage import prepare_jetstream, publish_delta, publish_stage, register_ping, register_query_stage
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_generator.citations import citations_for, extractive_answer
from rag_generator.llm import stream_completion
from rag_generator.prompting import REFUSAL, build_messages, new_salt
from rag_generator.settings import GeneratorSettings

EXTRACTIVE = "extractive"

DeltaSink = Callable[[QueryRetrieved, AnswerDelta], Awaitable[None]]


class Generator:
    """Drafts answers; token deltas go to the waiting gateway through ``broker``.

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

    async def draft(self, query: QueryRetrieved) -> QueryDrafted:
        attempt = new_id()
        seq = 0

        async def emit(text: str) -> None:
            nonlocal seq
            await self.on_delta(query, AnswerDelta(request_id=query.request_id, attempt=attempt, seq=seq, text=text))
            seq += 1

        route = query.route
        usage = Usage()
        if query.refused or not query.passages:
            answer, model = REFUSAL, "none"
            await emit(answer)
        else:
            model_name = self.settings.model_for(route.tier)
            if model_name is None:
                answer, model = (
                    extractive_answer(query.question, query.passages, self.settings.extractive_sentences),
                    EXTRACTIVE,
                )
                for line in answer.splitlines(keepends=True):
                    await emit(line)
            else:
                messages = build_messages(query.question, query.passages, new_salt(), query.selected_text)
                started = time.perf_counter()
                with self.telemetry.tracer.start_as_current_span("llm.completion") as span:
                    span.set_attribute("llm.model", model_name)
                    completion = await stream_completion(self.settings, model_name, messages, emit)
                    span.set_attribute("llm.output_tokens", completion.usage.output_tokens)
                query.timings_ms["llm"] = round((time.perf_counter() - started) * 1000, 3)
                answer, model, usage = completion.text.strip(), completion.model, completion.usage
        route = route.model_copy(update={"model": model})
        return advance(
            QueryDrafted,
            query,
            route=route,
            answer=answer,
            model=model,
            citations=citations_for(answer, query.passages),
            usage=usage,
        )


def build_broker(settings: GeneratorSettings, telemetry: ServiceTelemetry) -> NatsBroker:
    broker = make_broker(settings, telemetry)
    generator = Generator(settings, broker, telemetry)

    async def on_retrieved(query: QueryRetrieved) -> None:
        with telemetry.stage("generator") as timer:
            drafted = await generator.draft(query)
        drafted.timings_ms["generator"] = timer.ms
        await publish_stage(broker, drafted, subjects.QUERY_DRAFTED)

    register_query_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.QUERY_RETRIEVED,
        consumer=subjects.GENERATOR_CONSUMER,
        model=QueryRetrieved,
        work=on_retrieved,
        ack_wait=max(settings.query_ack_wait_s, settings.timeout_s * (settings.num_retries + 1) + 10),
    )

    async def check() -> dict[str, str]:
        return {
            "model_fast": settings.model_for("fast") or EXTRACTIVE,
            "model_strong": settings.model_for("strong") or EXTRACTIVE,
        }

    register_ping(broker, "generator", check)
    return broker


def create_app(settings: GeneratorSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("generator")
    broker = build_broker(settings, telemetry)
    app = FastStream(broker)

    @app.on_startup
    async def startup() -> None:
        await prepare_jetstream(broker, settings)
        telemetry.serve_metrics(settings.metrics_host, settings.metrics_port)

    return app
