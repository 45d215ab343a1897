"""A stage that gives up on a question the teacher asked to write again fails that question alone:
the paper is done again as it was, and says so."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from rag_common.store.assessments import AssessmentMetrics, AssessmentStore, assessment_failure_hook
from rag_common.wire.messages.assessment import AssessmentState, Blueprint, Question
from tests.support.buckets import MemoryKeyValue

pytestmark = pytest.mark.unit

ID = "0123456789abcdef0123456789abcdef"


def question(index: int) -> Question:
    return Question(
        index=index, kind="mcq", stem=f"Stem {index}?", answer="a", bloom="remember", difficulty="easy", marks=1
    )


async def stored() -> AssessmentStore:
    """A paper being rewritten: queued again, its questions as they were."""
    store = AssessmentStore(MemoryKeyValue())
    state = AssessmentState(id=ID, status="retrieving", blueprint=Blueprint(), questions=[question(0), question(3)])
    await store.put(state)
    return store


async def test_a_failed_rewrite_leaves_the_paper_done_as_it_was_and_says_why() -> None:
    store = await stored()
    report = assessment_failure_hook(lambda: store, AssessmentMetrics(CollectorRegistry()))
    await report({"assessment": {"id": ID, "rewrite": 3}}, "collection_not_found", "unknown collection 'x'", 404)
    state = await store.get(ID)
    assert state is not None
    assert state.status == "done"
    assert [q.stem for q in state.questions] == ["Stem 0?", "Stem 3?"]
    assert state.edits == [
        "Question 2 could not be written again (collection_not_found: unknown collection 'x'); it stays as it was."
    ]
    assert state.error is None
