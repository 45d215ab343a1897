"""Questions written by rules, the evaluator's checks of them, and the GIFT export's grammar."""

from __future__ import annotations

import pytest

from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import AssessmentState, Blueprint, Citation, Question, QuestionSpec
from rag_evaluator.question_checks import validate
from rag_gateway.exports import to_gift, to_markdown
from rag_generator.questions import is_paraphrase, term_pool, terms_of, write_question
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
        n=2, source="a.md", text="Starter costs $8 per user. Enterprise costs $25 per user. Support costs $40 a call."
    ),
    Passage(n=3, source="b.md", text="Logs are kept for 400 days. Backups are kept for 30 days. Tokens live 7 days."),
]


def spec(kind: str, bloom: str = "remember") -> QuestionSpec:
    return QuestionSpec.model_validate({"index": 0, "kind": kind, "bloom": bloom, "marks": 1})


def test_terms_are_typed_values_names_and_defined_terms() -> None:
    found = terms_of("The Pro plan costs $12 per user and keeps 90 days for Northwind Health Plus members.")
    assert ("$12", "money") in [(t.text, t.type) for t in found]
    assert ("90 days", "quantity:day") in [(t.text, t.type) for t in found]
    assert ("Northwind Health Plus", "name") in [(t.text, t.type) for t in found]
    assert is_paraphrase("$12", "12 dollars")
    assert is_paraphrase("Pro plan", "the Pro plan")
    assert not is_paraphrase("$12", "$8")


def test_an_mcq_blanks_a_value_and_takes_same_type_distractors_the_passage_does_not_hold() -> None:
    pool = term_pool([*FOILS, PLANS])
    question = write_question(spec("mcq"), [PLANS], pool, seed=1)
    assert question is not None
    assert question.answer == "$12"
    assert "_____" in question.stem
    assert question.stem.startswith("Identify")
    distractors = [o for i, o in enumerate(question.options) if i != question.answer_index]
    assert sorted(distractors) == ["$25", "$40", "$8"]
    verdict = validate(question, [PLANS], None, [])
    assert verdict.valid, verdict.reasons


def test_short_questions_define_or_explain_with_a_quoted_model_answer() -> None:
    define = write_question(spec("short", "remember"), [PLANS], {}, seed=1)
    assert define is not None
    assert define.stem.startswith("Define refund")
    assert define.answer == "A refund is a return of the unused part of a prepaid annual subscription."
    explain = write_question(spec("short", "understand"), [PLANS], {}, seed=1)
    assert explain is not None
    assert explain.stem.lower().startswith("explain why refunds are prorated")
    assert validate(explain, [PLANS], None, []).valid


def test_the_checks_catch_an_unsupported_key_a_supported_distractor_a_wrong_verb_and_a_duplicate() -> None:
    good = write_question(spec("mcq"), [PLANS], term_pool([*FOILS, PLANS]), seed=1)
    assert good is not None
    wrong_key = good.model_copy(update={"answer": "$8", "answer_index": good.options.index("$8")})
    assert not validate(wrong_key, [PLANS], None, []).checks["key_supported"]
    options = list(good.options)
    options[(good.answer_index or 0) - 1] = "90 days"
    supported = good.model_copy(update={"options": options})
    assert not validate(supported, [PLANS], None, []).checks["no_distractor_supported"]
    assert not validate(good.model_copy(update={"bloom": "evaluate"}), [PLANS], None, []).checks["bloom_verb"]
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
    )
    assert not validate(options_stem, [PLANS], None, []).checks["well_formed"]


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


def test_a_capitalised_word_inside_a_sentence_is_a_name_to_blank() -> None:
    sentence = "You can call the model from Python or TypeScript with the official client libraries."
    assert [t.text for t in terms_of(sentence) if t.type == "name"] == ["Python", "TypeScript"]
    passage = Passage(n=1, source="sdk.md", section="Client libraries", text=sentence)
    foils = [
        Passage(n=2, source="x.md", text="Examples exist in Java and Go. Others use Ruby for scripts and Rust too.")
    ]
    question = write_question(spec("mcq"), [passage], term_pool([*foils, passage]), seed=2)
    assert question is not None
    assert question.answer == "Python"
    assert {o for o in question.options if o != "Python"} <= {"Java", "Go", "Ruby", "Rust"}
    assert validate(question, [passage], None, []).valid


def test_a_short_answer_can_quote_a_table_row_when_the_passage_has_no_sentence() -> None:
    table = Passage(n=1, source="limits.md", section="Rate limits", text="Tier: Free; Requests per minute: 50\n")
    question = write_question(spec("short"), [table], {}, seed=1)
    assert question is not None
    assert "Requests per minute: 50" in question.answer
    assert validate(question, [table], None, []).checks["key_supported"]


def test_a_pronoun_is_not_a_defined_term() -> None:
    assert [t for t in terms_of("This is a limit on what the plan pays in a year.") if t.type == "term"] == []
    passage = Passage(n=1, source="plan.pdf", section="Limits", text="This is a limit on what the plan pays in a year.")
    question = write_question(spec("short", "remember"), [passage], {}, seed=1)
    assert question is not None
    assert not question.stem.startswith("Define This")
    assert question.stem == 'State the main points that "Limits" (plan.pdf) makes.'


def test_a_list_item_of_several_sentences_is_not_asked_as_one_how_clause() -> None:
    # A list item is kept whole; "Explain how Describe the scene ... Focus on ..." asks nothing.
    step = (
        "3. Describe the scene you imagined in a single sentence. Focus on making it vivid and short. "
        'For example: "A bluebird whistled a merry melody as it soared through the azure sky."'
    )
    passage = Passage(n=1, source="eval-tool.md", section="Tips for Effective Evaluation", text=step)
    question = write_question(spec("short", "understand"), [passage], {}, seed=1)
    assert question is not None
    assert not question.stem.startswith("Explain how")
    assert question.stem == 'State the main points that "Tips for Effective Evaluation" (eval-tool.md) makes.'
    one = Passage(n=1, source="sdk.md", section="Streaming", text="You read partial results early by using streaming.")
    explain = write_question(spec("short", "understand"), [one], {}, seed=1)
    assert explain is not None
    assert explain.stem.startswith("Explain how you read partial results early,")
