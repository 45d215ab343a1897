"""The evaluator's checks of rule-written questions, and the GIFT export's grammar."""

from __future__ import annotations

import pytest

from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import AssessmentState, Blueprint, Citation, Question, QuestionSpec
from rag_evaluator.question_checks import validate
from rag_gateway.exports import to_gift, to_markdown
from rag_generator.questions import term_pool, write_question
from tests.support.gift import GiftError, parse_gift

pytestmark = pytest.mark.unit

PLANS = Passage(
    n=1,
    source="billing.md",
    section="Billing > Plans",
    text="The Pro plan costs $12 per user per month and keeps 90 days of history.\n"
    "Refunds are prorated because customers should only pay for the months they used.\n"
    "A refund is a return of the unused part of a prepaid annual subscription.",
)
FOILS = [
    Passage(
        n=2,
        source="a.md",
        text="The Starter plan costs $8 per user each month. The Enterprise plan costs $25 per user each month. "
        "A support call with an engineer costs $40 a call.",
    ),
    Passage(
        n=3,
        source="b.md",
        text="Audit logs are kept for 400 days on every plan. Backups are kept for 30 days in two regions. "
        "Access tokens stay valid for 7 days after sign-in.",
    ),
]


def spec(kind: str, bloom: str = "remember") -> QuestionSpec:
    return QuestionSpec.model_validate({"index": 0, "kind": kind, "bloom": bloom, "marks": 1})


def test_the_checks_catch_an_unsupported_key_a_supported_distractor_a_wrong_level_and_a_duplicate() -> None:
    good = write_question(spec("mcq"), [PLANS], term_pool([*FOILS, PLANS]), seed=1)
    assert good is not None
    assert validate(good, [PLANS], None, []).valid
    wrong = next(o for o in good.options if o != good.answer)
    wrong_key = good.model_copy(update={"answer": wrong, "answer_index": good.options.index(wrong)})
    assert not validate(wrong_key, [PLANS], None, []).checks["key_supported"]
    options = list(good.options)
    options[(good.answer_index or 0) - 1] = "90 days" if good.answer.startswith("$") else "$12"
    supported = good.model_copy(update={"options": options})
    assert not validate(supported, [PLANS], None, []).checks["no_distractor_supported"]
    assert not validate(good.model_copy(update={"bloom": "evaluate"}), [PLANS], None, []).checks["bloom_form"]
    twin = validate(good, [PLANS], [1.0, 0.0], [(good, [0.95, 0.312])])
    assert not twin.checks["not_duplicate"]
    assert not twin.valid
    options_stem = Question(
        index=1,
        kind="short",
        stem="Explain which of the following is right.",
        answer="x",
        bloom="understand",
        difficulty="medium",
        marks=1,
        citations=[Citation(source="billing.md", quote=PLANS.text.splitlines()[1])],
        rule="why",
    )
    assert not validate(options_stem, [PLANS], None, []).checks["well_formed"]


def test_a_cloze_is_accepted_only_at_remember_and_options_of_two_shapes_are_not() -> None:
    cloze = Question(
        index=0,
        kind="mcq",
        stem="Fill in the blank: The Pro plan costs _____ per user per month.",
        options=["$12", "$8", "$25", "$40"],
        answer_index=0,
        answer="$12",
        bloom="remember",
        difficulty="medium",
        marks=1,
        citations=[Citation(source="billing.md", quote=PLANS.text.splitlines()[0])],
        rule="cloze",
    )
    assert validate(cloze, [PLANS], None, []).valid
    as_understand = cloze.model_copy(update={"bloom": "understand"})
    assert not validate(as_understand, [PLANS], None, []).checks["bloom_form"]
    mixed = cloze.model_copy(update={"options": ["$12", "14-day", "30 days", "90 days"]})
    assert not validate(mixed, [PLANS], None, []).checks["one_shape"]


def test_gift_export_parses_with_the_grammar_and_escapes_special_characters() -> None:
    mcq = Question(
        index=0,
        kind="mcq",
        stem='Identify the value: "a = b {c} costs _____ #1: ok"',
        options=["$12", "$8", "~5", "=3"],
        answer_index=0,
        answer="$12",
        bloom="remember",
        difficulty="easy",
        marks=1,
        citations=[Citation(source="billing.md", section="Plans", page=2)],
    )
    essay = Question(
        index=1,
        kind="long",
        stem="Describe refunds: how {they} work.",
        answer="Refunds are prorated.",
        bloom="understand",
        difficulty="easy",
        marks=6,
    )
    state = AssessmentState(id="abc", blueprint=Blueprint(counts={"mcq": 1, "long": 1}), questions=[mcq, essay])
    parsed = parse_gift(to_gift(state))
    assert [q.kind for q in parsed] == ["mcq", "essay"]
    assert parsed[0].stem == mcq.stem
    assert parsed[0].right == ["$12"]
    assert parsed[0].wrong == ["$8", "~5", "=3"]
    assert parsed[1].feedback == "Model answer: Refunds are prorated."
    with pytest.raises(GiftError):
        parse_gift("::t::Unescaped = sign {=a ~b}")
    markdown = to_markdown(state)
    assert "**1.**" in markdown
    assert "A. $12" in markdown.split("## Answer key")[1]


def test_a_value_distractor_is_supported_only_as_written() -> None:
    good = write_question(spec("mcq"), [PLANS], term_pool([*FOILS, PLANS]), seed=1)
    assert good is not None
    options = list(good.options)
    options[(good.answer_index or 0) - 1] = "$90"  # "90 days" is in the passage, "$90" is not
    assert validate(good.model_copy(update={"options": options}), [PLANS], None, []).checks["no_distractor_supported"]
