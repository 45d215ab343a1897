"""The answer cache's pure parts: keys, anchors, what may be looked up and kept, the in-memory
mirror of kept questions, and what a cached answer looks like on the wire and over HTTP."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_common.store.answer_cache import (
    context_digest,
    fits,
    normalize,
    question_digest,
    served,
    why_not_kept,
    why_not_looked_up,
)
from rag_common.store.cache_match import same_anchors
from rag_common.store.cache_mirror import Mirror, decode_vector, encode_vector
from rag_common.wire.http_api import Answer
from rag_common.wire.messages import (
    CacheKey,
    CacheScope,
    Draft,
    Evaluation,
    Passage,
    Query,
    QueryAnswered,
    QueryRouted,
    Retrieval,
    Route,
    Turn,
    Usage,
)
from rag_common.wire.messages.cache import CachedAnswer, CachedQuestion

pytestmark = pytest.mark.unit

SCOPE = CacheScope(tenant="tenant-acme", collection="orbitly", version=7, context=context_digest({}, None))
PASSAGE = Passage(n=1, source="pricing.md", section="Plans", text="The Business plan is $24 per user per month.")


def query(**fields: object) -> Query:
    values: dict[str, object] = {
        "request_id": "r1",
        "gateway_id": "g1",
        "question": "How much does the Business plan cost?",
        "tenant": "tenant-acme",
        "collection": "orbitly",
    }
    values.update(fields)
    return Query.model_validate(values)


def routed(route: Route | None = None, suspicions: list[str] | None = None, **fields: object) -> QueryRouted:
    return QueryRouted(query=query(**fields), route=route or Route(tier="fast"), suspicions=suspicions or [])


def key(**fields: object) -> CacheKey:
    values = {**SCOPE.model_dump(), "digest": "d" * 32, "question": "How much does the Business plan cost?"}
    values["vector"] = encode_vector([1.0, 0.0, 0.0])
    values.update(fields)
    return CacheKey.model_validate(values)


def answered(flags: dict[str, bool] | None = None, *, cache: CacheKey | None = None, **parts: object) -> QueryAnswered:
    flags = flags if flags is not None else {"refused": False, "conflicting_sources": False, "ungrounded": False}
    values: dict[str, object] = {
        "query": query(),
        "route": Route(tier="fast", model="extractive"),
        "retrieval": Retrieval(passages=[PASSAGE], cache=cache or key()),
        "draft": Draft(answer="The Business plan is $24 per user per month [1].", model="extractive", cited=[1]),
        "evaluation": Evaluation(flags=flags, flagged=False),
    }
    values.update(parts)
    return QueryAnswered.model_validate(values)


def kept_answer(**fields: object) -> CachedAnswer:
    a = answered()
    values: dict[str, object] = {
        **SCOPE.model_dump(),
        "question": "How much does the Business plan cost?",
        "stored_at": 1000.0,
        "route": a.route,
        "retrieval": a.retrieval.model_copy(update={"cache": None}),
        "draft": a.draft.model_copy(update={"usage": Usage(input_tokens=900, output_tokens=40, cost_usd=0.01)}),
        "evaluation": a.evaluation,
    }
    values.update(fields)
    return CachedAnswer.model_validate(values)


# --- keys ------------------------------------------------------------------------------------------


def test_case_spaces_and_closing_punctuation_do_not_change_the_key() -> None:
    context = context_digest({}, None)
    assert normalize("  How much  does the PRO plan cost?! ") == "how much does the pro plan cost"
    assert question_digest("How much does the Pro plan cost?", context) == question_digest(
        "how much does the pro plan   cost", context
    )
    assert question_digest("How much does the Pro plan cost?", context) != question_digest(
        "How much does the Business plan cost?", context
    )


def test_filters_and_selected_text_are_part_of_the_key() -> None:
    plain = context_digest({}, None)
    assert context_digest({"source": "faq.md"}, None) != plain
    assert context_digest({}, "the selected paragraph") != plain
    assert context_digest({"a": 1, "b": [1, 2]}, None) == context_digest({"b": [1, 2], "a": 1}, None)
    assert question_digest("Q?", plain) != question_digest("Q?", context_digest({"source": "faq.md"}, None))


def test_a_vector_survives_its_encoding() -> None:
    vector = [0.25, -1.5, 3.0]
    assert decode_vector(encode_vector(vector)).tolist() == vector


# --- anchors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kept", "asked", "agree"),
    [
        ("How much does the Pro plan cost?", "How much does the Business plan cost?", False),
        ("How much does the Pro plan cost?", "What is the price of the Pro plan?", True),
        ("How much does the Pro plan cost?", "how much does the pro plan cost", True),
        ("How much does the Pro plan cost for 10 users?", "How much does the Pro plan cost for 20 users?", False),
        ("What changed in version 4.2?", "What changed in version 4.3?", False),
        ("What are the support hours in Europe?", "What are the support hours in the US?", False),
        ("What is the API rate limit?", "What's the rate limit of the API?", True),
        ("Is Orbitly SOC 2 Type II certified?", "Does Orbitly have SOC 2 Type II certification?", True),
        ("Which encryption protects data at rest?", "How is data at rest encrypted?", True),  # no anchors
    ],
)
def test_anchors_keep_apart_questions_about_different_things(kept: str, asked: str, agree: bool) -> None:
    assert same_anchors(kept, asked) is agree
    assert same_anchors(asked, kept) is agree


# --- what may be looked up and kept -----------------------------------------------------------------


def test_only_a_standalone_question_of_a_known_tenant_is_looked_up() -> None:
    assert why_not_looked_up(routed()) is None
    assert why_not_looked_up(routed(history=[])) is None
    assert why_not_looked_up(routed(tenant=None)) == "no tenant"
    assert why_not_looked_up(routed(tenant="acme.*")) == "no tenant"  # never a wildcard in a key
    history = [Turn(question="How much is Pro?", answer="$12")]
    assert why_not_looked_up(routed(history=history)) == "a conversation with earlier turns"
    assert why_not_looked_up(routed(suspicions=["question: override"])) == "injection suspected"
    assert why_not_looked_up(routed(Route(tier="fast", attack_dropped=["override"]))) == "injection suspected"


def test_only_an_unflagged_answer_to_a_looked_up_question_is_kept() -> None:
    assert why_not_kept(answered()) is None
    assert why_not_kept(answered(retrieval=Retrieval(passages=[PASSAGE]))) == "not looked up"
    assert why_not_kept(answered(cached=True)) == "not looked up"  # a served answer is not kept again
    raised = answered({"refused": False, "conflicting_sources": True})
    assert why_not_kept(raised) == "flag raised: conflicting_sources"
    assert why_not_kept(answered({"refused": True})) == "flag raised: refused"
    refused = answered(draft=Draft(answer="I cannot find that.", model="extractive", refused=True))
    assert why_not_kept(refused) == "refused or flagged"
    conversation = answered(query=query(history=[Turn(question="Hi", answer="Hello")]))
    assert why_not_kept(conversation) == "a conversation with earlier turns"
    prefaced = answered(draft=Draft(answer="I will not do that. $24 [1].", model="x", preface="I will not do that."))
    assert why_not_kept(prefaced) == "injection suspected"
    assert why_not_kept(answered(route=Route(tier="greeting"))) == "tier greeting"


def test_a_kept_answer_fits_only_its_own_tenant_collection_version_and_context() -> None:
    assert fits(kept_answer(), SCOPE)
    for change in ({"tenant": "tenant-globex"}, {"collection": "other"}, {"version": 8}, {"context": "c" * 16}):
        assert not fits(kept_answer(), SCOPE.model_copy(update=change)), change


def test_a_served_answer_is_this_request_s_with_the_kept_parts_and_no_usage() -> None:
    asked = query(request_id="r2", trace_id="t2")
    routed = QueryRouted(query=asked, route=Route(tier="fast"))
    drafted = served(kept_answer(), routed, {"router": 0.5, "retriever": 1.25})
    assert drafted.kept == kept_answer().evaluation  # the evaluator sends it on with the kept evaluation
    answer = QueryAnswered.of(drafted, drafted.kept)
    assert answer.cached is True
    assert answer.query is asked
    assert answer.draft.answer == "The Business plan is $24 per user per month [1]."
    assert answer.draft.usage == Usage()
    assert answer.timings_ms == {"router": 0.5, "retriever": 1.25}
    body = Answer.of(answer)
    assert body.cached is True
    assert body.request_id == "r2"
    assert body.trace_id == "t2"
    assert [c.source for c in body.citations] == ["pricing.md"]


def test_the_final_answer_leaves_the_cache_key_behind_and_says_cached_false() -> None:
    wire = json.loads(answered().model_dump_json())
    assert "cache" not in wire["retrieval"]
    assert wire["cached"] is False
    assert Answer.of(answered()).model_dump()["cached"] is False


# --- the mirror ------------------------------------------------------------------------------------


def record(question: str, vector: list[float], **fields: object) -> CachedQuestion:
    values = {**SCOPE.model_dump(), "question": question, "vector": encode_vector(vector), "stored_at": 1000.0}
    values.update(fields)
    return CachedQuestion.model_validate(values)


def unit(*values: float) -> list[float]:
    array = np.asarray(values, dtype=np.float32)
    return [float(x) for x in array / np.linalg.norm(array)]


def test_the_mirror_finds_the_nearest_kept_question_at_the_threshold_or_above() -> None:
    mirror = Mirror()
    mirror.put("q.a", record("How much does the Business plan cost?", [1.0, 0.0, 0.0]))
    mirror.put("q.b", record("What does the Business plan include?", [0.0, 1.0, 0.0]))
    near = unit(0.97, 0.243, 0.0)  # cosine 0.97 to q.a
    found = mirror.nearest(SCOPE, near, "What does the Business plan cost?", min_cosine=0.95, not_before=0)
    assert found is not None
    assert found.key == "q.a"
    assert found.cosine == pytest.approx(0.97, abs=1e-3)
    assert mirror.nearest(SCOPE, near, "What does the Business plan cost?", min_cosine=0.98, not_before=0) is None


def test_the_mirror_never_matches_across_anchors_versions_contexts_tenants_or_age() -> None:
    mirror = Mirror()
    mirror.put("q.a", record("How much does the Business plan cost?", [1.0, 0.0]))
    same = [1.0, 0.0]
    ask = "How much does the Business plan cost?"
    assert mirror.nearest(SCOPE, same, "How much does the Pro plan cost?", min_cosine=0.9, not_before=0) is None
    assert mirror.nearest(SCOPE.model_copy(update={"context": "x"}), same, ask, min_cosine=0.9, not_before=0) is None
    other_tenant = SCOPE.model_copy(update={"tenant": "tenant-globex"})
    assert mirror.nearest(other_tenant, same, ask, min_cosine=0.9, not_before=0) is None
    assert mirror.nearest(SCOPE, same, ask, min_cosine=0.9, not_before=2000.0) is None  # kept before the TTL
    mirror.put("q.a", record(ask, [1.0, 0.0]))
    newer = SCOPE.model_copy(update={"version": 8})
    assert mirror.nearest(newer, same, ask, min_cosine=0.9, not_before=0) is None
    assert len(mirror) == 0  # an older version's questions are dropped once a newer one is seen


@pytest.mark.parametrize(
    ("kept", "asked"),
    [
        ("Which plan includes SSO?", "Which plan does not include SSO?"),
        ("Which plan has the most storage?", "Which plan has the fewest projects?"),
        ("is data residency available in the eu", "is data residency available in the us"),
        ("how much does the pro plan cost monthly", "how much does the pro plan cost annually"),
    ],
)
def test_the_mirror_never_serves_a_question_of_opposite_meaning_however_close(kept: str, asked: str) -> None:
    mirror = Mirror()
    mirror.put("q.a", record(kept, [1.0, 0.0]))
    assert mirror.nearest(SCOPE, [1.0, 0.0], asked, min_cosine=0.5, not_before=0) is None
    assert mirror.nearest(SCOPE, [1.0, 0.0], kept.upper(), min_cosine=0.5, not_before=0) is not None


def test_a_removed_question_is_no_longer_found() -> None:
    mirror = Mirror()
    mirror.put("q.a", record("How much does the Business plan cost?", [1.0, 0.0]))
    mirror.remove("q.a")
    assert (
        mirror.nearest(SCOPE, [1.0, 0.0], "How much does the Business plan cost?", min_cosine=0.5, not_before=0) is None
    )
