"""Wire messages the tests build often: a final answer as the evaluator publishes it."""

from __future__ import annotations

from rag_common.wire.messages import Draft, Evaluation, Passage, Query, QueryAnswered, Retrieval, Route


def answered(answer: str, request_id: str = "r1", passages: list[Passage] | None = None) -> QueryAnswered:
    """An unflagged final answer to ``request_id`` citing the first of ``passages`` (if any)."""
    passages = passages or []
    return QueryAnswered(
        query=Query(request_id=request_id, gateway_id="gw1", question="How much does Pro cost?"),
        route=Route(tier="fast"),
        retrieval=Retrieval(passages=passages),
        draft=Draft(answer=answer, model="extractive", cited=[p.n for p in passages[:1]]),
        evaluation=Evaluation(flags={}, flagged=False),
    )
