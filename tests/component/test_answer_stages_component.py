"""The generator and the evaluator alone: in memory, and the same bodies on a real nats-server."""

from __future__ import annotations

import pytest

from rag_common.transport.streams import QUERY_JSTREAM
from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import (
    AnswerDelta,
    Draft,
    Flag,
    Passage,
    Query,
    QueryAnswered,
    QueryDrafted,
    QueryRetrieved,
    Retrieval,
    Route,
)
from rag_evaluator.app import build_broker as build_evaluator
from rag_evaluator.settings import EvaluatorSettings
from rag_generator.app import build_broker as build_generator
from rag_generator.settings import GeneratorSettings
from tests.support.components import BrokerMode

pytestmark = pytest.mark.component

PRICING = Passage(
    n=1,
    source="pricing.md",
    section="Plans",
    text="Plan: Pro; Price per user per month: $12; Max projects: 50",
    score=0.9,
    similarity=0.8,
)
BROCHURE = Passage(
    n=2,
    source="brochure.md",
    section="Pro",
    text="The Pro plan costs $15 per user per month and includes unlimited guests.",
    score=0.8,
    similarity=0.7,
)


def retrieved(passages: list[Passage]) -> QueryRetrieved:
    return QueryRetrieved(
        query=Query(request_id="r1", gateway_id="gw", question="How much does the Pro plan cost per user per month?"),
        route=Route(tier="fast"),
        retrieval=Retrieval(passages=passages),
    )


async def test_generator_drafts_a_cited_extractive_answer_and_streams_it(mode: BrokerMode) -> None:
    broker, _ = build_generator(GeneratorSettings(metrics_port=0, **mode.settings), setup_telemetry("generator"))
    drafted: list[QueryDrafted] = []
    deltas: list[AnswerDelta] = []

    @broker.subscriber(subjects.QUERY_DRAFTED, stream=QUERY_JSTREAM, durable="probe", pull_sub=True)
    async def capture(msg: QueryDrafted) -> None:
        drafted.append(msg)

    @broker.subscriber(subjects.answer_subject("gw", "r1", "delta"))
    async def capture_delta(msg: AnswerDelta) -> None:
        deltas.append(msg)

    async with mode.broker(broker) as br:
        await br.publish(retrieved([PRICING]), subjects.QUERY_RETRIEVED, stream=subjects.QUERY_STREAM)
        await capture.wait_call(timeout=10)
    [answer] = drafted
    assert "$12" in answer.draft.answer
    assert "[1]" in answer.draft.answer
    assert [c.source for c in answer.citations] == ["pricing.md"]
    assert not answer.draft.refused
    assert "generator" in answer.timings_ms
    if mode.real:  # deltas go straight to the NATS connection (no span per token): only a server carries them
        streamed = "".join(d.text for d in sorted(deltas, key=lambda d: d.seq))
        assert streamed == answer.draft.answer


def drafted_over(passages: list[Passage], draft: Draft | None = None) -> QueryDrafted:
    """An extractive draft citing [1] over ``passages`` (or ``draft``), as the generator hands it on."""
    stage = retrieved(passages)
    return QueryDrafted(
        query=stage.query,
        route=stage.route,
        retrieval=stage.retrieval,
        draft=draft or Draft(answer="The Pro plan costs $12 per user per month [1].", model="extractive", cited=[1]),
        timings_ms={"router": 0.5, "retriever": 12.0, "generator": 2.0},
    )


async def evaluated(mode: BrokerMode, drafted: QueryDrafted) -> QueryAnswered:
    """The final message the evaluator publishes to the asking gateway for ``drafted``."""
    broker, _ = build_evaluator(EvaluatorSettings(metrics_port=0, **mode.settings), setup_telemetry("evaluator"))
    finals: list[QueryAnswered] = []

    @broker.subscriber(subjects.answer_subject("gw", "r1", "final"))
    async def capture(msg: QueryAnswered) -> None:
        finals.append(msg)

    async with mode.broker(broker) as br:
        await br.publish(drafted, subjects.QUERY_DRAFTED, stream=subjects.QUERY_STREAM)
        await capture.wait_call(timeout=10)
    [final] = finals
    return final


async def test_evaluator_flags_disagreeing_sources_on_the_final_answer(mode: BrokerMode) -> None:
    drafted = drafted_over([PRICING, BROCHURE])
    final = await evaluated(mode, drafted)
    # The drafted message's parts travel on unchanged; the evaluator adds its evaluation and its time.
    assert final.type == "rag.answer.final.v2"
    assert (final.query, final.route, final.retrieval, final.draft, final.suspicions) == (
        drafted.query,
        drafted.route,
        drafted.retrieval,
        drafted.draft,
        drafted.suspicions,
    )
    assert final.timings_ms.keys() == {"router", "retriever", "generator", "evaluator"}
    assert {k: final.timings_ms[k] for k in drafted.timings_ms} == drafted.timings_ms
    assert final.citations == [PRICING]
    evaluation = final.evaluation
    assert evaluation.raised(Flag.CONFLICTING_SOURCES)
    assert not evaluation.raised(Flag.CITATION_INVALID)
    assert evaluation.flagged
    assert evaluation.details[Flag.CONFLICTING_SOURCES] == [
        {"subject": "pro", "values": {"pricing.md": ["$12"], "brochure.md": ["$15"]}}
    ]


async def test_evaluator_passes_a_grounded_cited_answer(mode: BrokerMode) -> None:
    final = await evaluated(mode, drafted_over([PRICING]))
    assert not final.evaluation.flagged, final.evaluation.details
    assert not any(final.evaluation.flags.values()), final.evaluation.details


async def test_evaluator_gives_a_refusals_reason_as_the_refused_detail(mode: BrokerMode) -> None:
    why = "no passage reaches the collection's relevance threshold"
    draft = Draft(answer="I don't know based on the documents.", model="none", refused=True, refusal_reason=why)
    final = await evaluated(mode, drafted_over([], draft))
    assert final.evaluation.raised(Flag.REFUSED)
    assert not final.evaluation.flagged
    assert final.evaluation.details == {"refused": why}
    assert final.draft == draft
