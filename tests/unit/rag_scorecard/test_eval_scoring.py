"""Unit tests for the evaluation harness: every metric formula against hand-computed values.

The fixture ranking below is small enough to score on paper; each expected number in a test is
worked out in the comment beside it, so a change of formula shows up as a readable diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_common.wire.messages import Passage
from rag_scorecard.answer_metrics import (
    AnswerScores,
    Ceiling,
    citations_valid,
    cited_numbers,
    disallowed_found,
    flags_match,
    keyword_recall,
    repeated_facts,
    score_answer,
    should_refuse,
    summarize_answers,
)
from rag_scorecard.dataset import collection_for, load_dataset, parse_questions, slug
from rag_scorecard.errors import UsageError
from rag_scorecard.markdown import render_markdown
from rag_scorecard.metrics import (
    Expectations,
    GoldSource,
    MatchRule,
    Observed,
    RetrievalScores,
    f1_score,
    hit_at_k,
    passage_matches,
    precision_at_k,
    recall_at_k,
    reciprocal_rank_at_k,
    score_retrieval,
    summarize_retrieval,
)
from rag_scorecard.stats import percentile, percentiles, stage_percentiles
from rag_scorecard.thresholds import GATEABLE_METRICS, check_thresholds, parse_thresholds

pytestmark = pytest.mark.unit

PLANS = GoldSource("pricing.md", section="Plans")
SLA_P2 = GoldSource("sla.pdf", page=2)
NOTES = GoldSource("notes.txt")


def passage(n: int, source: str, section: str = "", page: int | None = None) -> Passage:
    return Passage(n=n, source=source, section=section, page=page)


# Ranked best first. Relevant to GOLD = (PLANS, SLA_P2): ranks 2 (PLANS), 4 (SLA_P2) and 5 (PLANS again).
RANKING = (
    passage(1, "faq.md", "Billing"),
    passage(2, "pricing.md", "Plans"),
    passage(3, "sla.pdf", page=3),
    passage(4, "sla.pdf", page=2),
    passage(5, "pricing.md", "Plans"),
)
GOLD = (PLANS, SLA_P2)


# --- matching ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("returned", "gold", "rule", "expected"),
    [
        (passage(1, "pricing.md", "Plans"), PLANS, MatchRule(), True),
        (passage(1, "pricing.md", "Free trial"), PLANS, MatchRule(), False),  # other section
        (passage(1, "billing.md", "Plans"), PLANS, MatchRule(), False),  # other file
        (passage(1, "notes.txt", "Anything"), NOTES, MatchRule(), True),  # gold without section: file only
        (passage(1, "sla.pdf", page=2), SLA_P2, MatchRule(), True),
        (passage(1, "sla.pdf", page=3), SLA_P2, MatchRule(), False),
        (passage(1, "sla.pdf", page=3), SLA_P2, MatchRule(page_tolerance=1), True),
        (passage(1, "sla.pdf", page=4), SLA_P2, MatchRule(page_tolerance=1), False),
        (passage(1, "sla.pdf", page=None), SLA_P2, MatchRule(page_tolerance=1), False),  # no page: no match
        (passage(1, "Plans.md", "Plans"), GoldSource("docs/plans.md", "Plans"), MatchRule(basename_only=True), False),
        (passage(1, "plans.md", "Plans"), GoldSource("docs/plans.md", "Plans"), MatchRule(), False),
        (passage(1, "plans.md", "Plans"), GoldSource("docs/plans.md", "Plans"), MatchRule(basename_only=True), True),
    ],
)
def test_passage_matches_source_and_section_or_page(
    returned: Passage, gold: GoldSource, rule: MatchRule, expected: bool
) -> None:
    assert passage_matches(returned, gold, rule) is expected


# --- retrieval metrics, one question -----------------------------------------------------------


def test_hit_at_k_looks_only_at_the_first_k() -> None:
    assert hit_at_k(RANKING, GOLD, 1) == 0.0  # rank 1 is faq.md
    assert hit_at_k(RANKING, GOLD, 2) == 1.0  # rank 2 is pricing.md § Plans
    assert hit_at_k(RANKING, GOLD, 5) == 1.0
    assert hit_at_k((), GOLD, 5) == 0.0


def test_precision_divides_by_k_or_by_what_was_returned() -> None:
    assert precision_at_k(RANKING, GOLD, 3) == pytest.approx(1 / 3)  # ranks 1-3: only rank 2 matches
    assert precision_at_k(RANKING, GOLD, 5) == pytest.approx(3 / 5)  # ranks 2, 4, 5
    # Two passages returned, both right: 2/2, not 2/3.
    assert precision_at_k(RANKING[1::3], GOLD, 3) == 1.0
    assert precision_at_k((), GOLD, 3) == 0.0


def test_recall_counts_gold_entries_found_not_matching_passages() -> None:
    assert recall_at_k(RANKING, GOLD, 3) == 0.5  # PLANS found, SLA_P2 (rank 4) not yet
    assert recall_at_k(RANKING, GOLD, 5) == 1.0
    # Two passages of the same gold section still find one gold entry of two.
    assert recall_at_k((RANKING[1], RANKING[4]), GOLD, 3) == 0.5
    assert recall_at_k(RANKING, (), 3) == 0.0


def test_reciprocal_rank_is_one_over_the_first_matching_rank_within_k() -> None:
    assert reciprocal_rank_at_k(RANKING, GOLD, 3) == 0.5  # first match at rank 2
    assert reciprocal_rank_at_k(RANKING, GOLD, 1) == 0.0  # rank 2 is outside k=1
    assert reciprocal_rank_at_k(RANKING[2:], GOLD, 3) == 0.5  # sla p3, sla p2: rank 2
    assert reciprocal_rank_at_k(RANKING[2:], GOLD, 10) == 0.5
    assert reciprocal_rank_at_k((RANKING[0], RANKING[2]), GOLD, 10) == 0.0


def test_f1_is_the_harmonic_mean() -> None:
    assert f1_score(0.5, 1.0) == pytest.approx(2 * 0.5 * 1.0 / 1.5)  # 0.6667
    assert f1_score(0.428, 0.659) == pytest.approx(0.519, abs=1e-3)  # the cookbook's basic RAG row
    assert f1_score(0.0, 0.0) == 0.0


def test_score_retrieval_collects_every_metric_and_widens_pages_by_one() -> None:
    scores = score_retrieval(RANKING, GOLD)
    assert scores == RetrievalScores(
        hit_at_1=0.0,
        hit_at_5=1.0,
        recall_at_3=0.5,
        recall_at_5=1.0,
        precision_at_3=pytest.approx(1 / 3),  # type: ignore[arg-type]  # compared, never computed with
        mrr_at_3=0.5,
        mrr_at_10=0.5,
        page_hit_at_5_pm1=1.0,
    )
    # Only sla.pdf page 3 returned: a strict miss, a hit within ±1 page.
    near = score_retrieval((passage(1, "sla.pdf", page=3),), (SLA_P2,))
    assert (near.hit_at_5, near.page_hit_at_5_pm1) == (0.0, 1.0)


# --- retrieval metrics, whole set --------------------------------------------------------------


def test_summary_averages_per_question_and_takes_f1_from_the_means() -> None:
    first = score_retrieval(RANKING, GOLD)  # p@3 = 1/3, r@3 = 1/2
    second = score_retrieval((passage(1, "pricing.md", "Plans"),), (PLANS,))  # p@3 = 1, r@3 = 1
    summary = summarize_retrieval([first, second], has_page_gold=True)
    assert summary.questions == 2
    assert summary.hit_at_1 == 0.5  # (0 + 1) / 2
    assert summary.precision_at_3 == pytest.approx(2 / 3)  # (1/3 + 1) / 2
    assert summary.recall_at_3 == pytest.approx(3 / 4)  # (1/2 + 1) / 2
    # F1 of the means: 2 * (2/3) * (3/4) / (2/3 + 3/4) = 1 / (17/12) = 12/17, not the mean of the F1s.
    assert summary.f1_at_3 == pytest.approx(12 / 17)
    assert summary.mrr_at_3 == pytest.approx(0.75)  # (1/2 + 1) / 2
    assert summary.page_hit_at_5_pm1 == 1.0


def test_summary_without_page_gold_or_questions_reports_none() -> None:
    summary = summarize_retrieval([score_retrieval(RANKING, GOLD)], has_page_gold=False)
    assert summary.page_hit_at_5_pm1 is None
    empty = summarize_retrieval([], has_page_gold=True)
    assert empty.questions == 0
    assert empty.hit_at_5 is None
    assert empty.f1_at_3 is None
    assert empty.page_hit_at_5_pm1 is None


# --- answer metrics ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "numbers"),
    [
        ("Pro is $12 [1] and Business $24 [2].", [1, 2]),
        ("Both [1][3] and again [1].", [1, 3]),
        ("Listed [2, 1].", [2, 1]),
        ("A link [1](http://example.com) is no citation.", []),
        ("None at all.", []),
    ],
)
def test_cited_numbers(answer: str, numbers: list[int]) -> None:
    assert cited_numbers(answer) == numbers


def test_citations_are_valid_only_when_present_and_all_known() -> None:
    assert citations_valid("A [1] and B [3].", [1, 2, 3]) is True
    assert citations_valid("A [4].", [1, 2, 3]) is False  # points at no passage
    assert citations_valid("A [1] and [4].", [1, 2, 3]) is False  # one bad number is enough
    assert citations_valid("No citation.", [1, 2, 3]) is False  # nothing cited


def test_keyword_recall_is_case_insensitive_substring_share() -> None:
    answer = "Email support runs Monday to Friday, 09:00-19:00 CET."
    assert keyword_recall(answer, ["monday", "FRIDAY", "19:00", "Saturday"]) == 0.75  # 3 of 4
    assert keyword_recall(answer, []) is None


def test_disallowed_keywords_found_case_insensitively() -> None:
    assert disallowed_found("The capital is CANBERRA.", ["Canberra", "Sydney"]) == ["Canberra"]
    assert disallowed_found("I don't have that in the documents.", ["Canberra"]) == []


def test_flags_match_checks_only_listed_flags_and_missing_means_false() -> None:
    flags = {"refused": False, "conflicting_sources": True, "citation_invalid": False}
    assert flags_match(flags, {"refused": False, "conflicting_sources": True}) is True
    assert flags_match(flags, {"conflicting_sources": False}) is False
    assert flags_match({"refused": False}, {"injection_suspected": False}) is True
    assert flags_match({"refused": False}, {"injection_suspected": True}) is False


def test_should_refuse_prefers_explicit_flag_over_out_of_scope() -> None:
    assert should_refuse(Expectations(out_of_scope=True)) is True
    assert should_refuse(Expectations()) is False
    assert should_refuse(Expectations(expected_flags={"refused": True})) is True  # e.g. prompt injection
    assert should_refuse(Expectations(out_of_scope=True, expected_flags={"refused": False})) is False


def observed(answer: str, *, refused: bool = False, tier: str = "fast", passages: int = 2, **flags: bool) -> Observed:
    return Observed(
        answer=answer,
        refused=refused,
        flagged=any(flags.values()),
        flags={"refused": refused, **flags},
        tier=tier,
        passages=tuple(passage(n, "pricing.md", "Plans") for n in range(1, passages + 1)),
    )


def test_score_answer_for_an_in_scope_question() -> None:
    expect = Expectations(
        expected_sources=(PLANS,),
        expected_keywords=("$12", "$15"),
        disallowed_keywords=("free",),
        expected_flags={"refused": False, "conflicting_sources": True},
        expected_tier="fast",
    )
    seen = observed("Pro costs $12 [1] or $15 [2].", conflicting_sources=True)
    assert score_answer(expect, seen) == AnswerScores(
        refusal_correct=True,
        citation_valid=True,
        flagged=True,
        keyword_recall=1.0,
        disallowed_found=(),
        flags_correct=True,
        tier_correct=True,
        answer_words=5,
        answerable_refused=False,
        repeated_facts=0,
        ceiling=Ceiling(key_facts=(0.0, 0.0, 0.0), content=(None, None, None)),  # the passages hold no text
    )


def test_score_answer_for_refusals_and_greetings_skips_citations() -> None:
    out_of_scope = Expectations(disallowed_keywords=("Canberra",), out_of_scope=True)
    refused = score_answer(out_of_scope, observed("I don't have that in the documents.", refused=True, passages=0))
    assert refused.refusal_correct is True
    assert refused.citation_valid is None
    assert refused.disallowed_found == ()
    assert refused.keyword_recall is None
    assert refused.tier_correct is None
    # A greeting is answered without passages: nothing to cite, so citations are not judged.
    greeting = score_answer(Expectations(expected_tier="greeting"), observed("Hello!", tier="greeting", passages=0))
    assert greeting.citation_valid is None
    assert greeting.tier_correct is True
    # Answering an out-of-scope question is a wrong refusal decision.
    answered = score_answer(out_of_scope, observed("Canberra [1]."))
    assert answered.refusal_correct is False
    assert answered.disallowed_found == ("Canberra",)


def test_answer_summary_uses_each_checks_own_denominator() -> None:
    scores = [
        AnswerScores(True, True, False, 1.0, None, True, True),
        AnswerScores(True, False, True, 0.5, ("Canberra",), None, False),
        AnswerScores(False, None, False, None, (), False, None),
        AnswerScores(True, None, False, None, None, None, None),
    ]
    summary = summarize_answers(scores)
    assert summary.questions == 4
    assert summary.refusal_accuracy == 0.75  # 3 of 4
    assert summary.citation_validity == 0.5  # 1 of the 2 judged
    assert summary.flagged_rate == 0.25  # 1 of 4
    assert summary.keyword_recall == 0.75  # (1.0 + 0.5) / 2
    assert summary.disallowed_violations == 1
    assert summary.disallowed_violation_rate == 0.5  # 1 of the 2 that list disallowed keywords
    assert summary.flag_accuracy == 0.5  # 1 of 2
    assert summary.tier_accuracy == 0.5  # 1 of 2


# --- latency -----------------------------------------------------------------------------------


def test_percentile_interpolates_linearly_between_ranks() -> None:
    values = [40.0, 10.0, 30.0, 20.0]  # sorted: 10, 20, 30, 40
    assert percentile(values, 50) == 25.0  # position 1.5: halfway between 20 and 30
    assert percentile(values, 95) == pytest.approx(38.5)  # position 2.85: 30 + 0.85 * 10
    assert percentile(values, 0) == 10.0
    assert percentile(values, 100) == 40.0
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError, match=r"within 0\.\.100"):
        percentile(values, 101)


def test_percentiles_of_no_answers_are_unknown_not_zero() -> None:
    empty = percentiles([])
    assert (empty.p50, empty.p95, empty.count) == (None, None, 0)


def test_stage_percentiles_count_only_answers_that_ran_the_stage() -> None:
    stages = stage_percentiles([{"router": 1.0, "retriever": 30.0}, {"router": 3.0}])
    assert stages["router"].p50 == 2.0
    assert stages["router"].count == 2
    assert stages["retriever"].p50 == 30.0
    assert stages["retriever"].count == 1


# --- dataset, names and thresholds -------------------------------------------------------------


def test_parse_questions_reads_single_items_and_conversations() -> None:
    lines = [
        '{"id": "q1", "question": "Price?", "expected_sources": [{"source": "pricing.md", "section": "Plans"}],'
        ' "expected_tier": "fast", "reference_answer": "ignored"}',
        "",
        '{"id": "c1", "conversation": [{"question": "What is Pro?"}, {"question": "And the price?",'
        ' "expected_keywords": ["$12"]}]}',
    ]
    items = parse_questions(lines)
    assert [i.id for i in items] == ["q1", "c1"]
    assert items[0].turns[0].expect.expected_sources == (PLANS,)
    assert items[0].turns[0].expect.expected_tier == "fast"
    assert not items[0].is_conversation
    turns = items[1].turns
    assert [t.id for t in turns] == ["c1.1", "c1.2"]
    assert [t.turn for t in turns] == [1, 2]
    assert items[1].is_conversation
    assert turns[1].expect.expected_keywords == ("$12",)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "q1", "question": "x"', "line 2: not valid JSON"),
        ('["q1"]', "line 2: expected a JSON object"),
        ('{"id": "q2"}', "exactly one of 'question' or 'conversation'"),
        ('{"id": "q2", "question": "x", "expected_tier": "fastest"}', "line 2: expected_tier"),
        ('{"id": "q2", "question": "x", "expected_sources": [{"page": 1}]}', "expected_sources.0.source"),
        ('{"id": "q1", "question": "x"}', "id 'q1' already used on line 1"),
        ('{"id": "q2", "conversation": []}', "at least one turn"),
    ],
)
def test_parse_questions_names_the_line_and_the_problem(line: str, message: str) -> None:
    with pytest.raises(UsageError, match=r"questions\.jsonl") as error:
        parse_questions(['{"id": "q1", "question": "ok"}', line])
    assert message in str(error.value)


def test_load_dataset_requires_corpus_and_questions(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_dataset(tmp_path / "missing")
    with pytest.raises(UsageError, match="no corpus/"):
        load_dataset(tmp_path)
    (tmp_path / "corpus").mkdir()
    with pytest.raises(UsageError, match=r"no questions\.jsonl"):
        load_dataset(tmp_path)
    (tmp_path / "questions.jsonl").write_text('{"id": "q1", "question": "x"}\n')
    with pytest.raises(UsageError, match="no supported documents"):
        load_dataset(tmp_path)
    (tmp_path / "corpus" / "a.md").write_text("# A\n\ntext\n")
    assert load_dataset(tmp_path).questions[0].question == "x"


def test_collection_and_report_names_are_slugs() -> None:
    assert slug("Anthropic Docs (v2)") == "anthropic-docs-v2"
    assert slug("***") == "dataset"
    assert collection_for("orbitly") == "eval-orbitly"
    assert collection_for("Contoso") == "eval-contoso"
    assert len(collection_for("x" * 100)) == 63


def test_thresholds_parse_and_reject_unknown_metrics() -> None:
    assert parse_thresholds(["retrieval.hit_at_5=0.8", "answers.refusal_accuracy=0.9"]) == {
        "retrieval.hit_at_5": 0.8,
        "answers.refusal_accuracy": 0.9,
    }
    with pytest.raises(UsageError) as error:
        parse_thresholds(["retrieval.hit_at_50=0.8"])
    assert "unknown metric 'retrieval.hit_at_50'" in str(error.value)
    assert all(name in str(error.value) for name in GATEABLE_METRICS)
    with pytest.raises(UsageError, match="metric=value"):
        parse_thresholds(["retrieval.hit_at_5"])
    with pytest.raises(UsageError, match="not a number"):
        parse_thresholds(["retrieval.hit_at_5=high"])


def test_check_thresholds_names_each_metric_below_its_threshold() -> None:
    report = {"retrieval": {"hit_at_5": 0.75, "page_hit_at_5_pm1": None}, "answers": {"refusal_accuracy": 0.95}}
    failures = check_thresholds(
        report,
        {"retrieval.hit_at_5": 0.8, "answers.refusal_accuracy": 0.9, "retrieval.page_hit_at_5_pm1": 0.5},
    )
    assert failures == [
        "retrieval.hit_at_5 = 0.7500 is below 0.8",
        "retrieval.page_hit_at_5_pm1 was not measured (no question in this set checks it); threshold 0.5",
    ]
    assert check_thresholds(report, {"retrieval.hit_at_5": 0.75}) == []  # equal passes


def test_markdown_summary_lists_metrics_and_misses() -> None:
    retrieval = dict.fromkeys(
        ["hit_at_1", "hit_at_5", "recall_at_3", "recall_at_5", "precision_at_3", "f1_at_3", "mrr_at_3", "mrr_at_10"],
        0.5,
    )
    answers = dict.fromkeys(
        ["refusal_accuracy", "citation_validity", "flagged_rate", "keyword_recall", "disallowed_violation_rate"], 1.0
    )
    report = {
        "dataset": "tiny",
        "questions": 1,
        "items_in_file": 1,
        "url": "http://x",
        "collection": "eval-tiny",
        "started_at": "2025-01-01T00:00:00+00:00",
        "seconds": 1.0,
        "match_basename": False,
        "retrieval": {"questions": 1, **retrieval, "page_hit_at_5_pm1": None},
        "answers": {
            **answers,
            "questions": 1,
            "disallowed_violations": 0,
            "flag_accuracy": None,
            "tier_accuracy": 1.0,
            "injection_accuracy": None,
            "rewrite_accuracy": None,
        },
        "latency_ms": {
            "p50": 100.0,
            "p95": 100.0,
            "count": 1,
            "stages": {"router": {"p50": 1.0, "p95": 1.0, "count": 1}},
        },
        "ingest": {
            "documents": 1,
            "indexed": 1,
            "unchanged": 0,
            "failed": 0,
            "chunks": 3,
            "seconds": 0.5,
            "gold_sources_missing": [],
        },
        "errors": [],
        "items": [
            {
                "id": "q1",
                "question": "Price?",
                "expected_sources": [{"source": "pricing.md", "section": "Plans"}],
                "passages": [{"source": "faq.md", "section": "Billing", "page": None}],
                "retrieval": {"hit_at_5": 0.0},
                "answers": {"refusal_correct": True},
                "refused": False,
            }
        ],
    }
    text = render_markdown(report)
    assert "| hit_at_5 | 0.500 |" in text
    assert "| page_hit_at_5_pm1 | – |" in text
    assert "| q1 | Price? | pricing.md § Plans | faq.md § Billing |" in text


def test_injection_and_rewrite_are_scored_only_where_the_item_asks() -> None:
    expect = Expectations(expected_flags={"refused": True, "injection_suspected": True}, expected_rewrite=("Business",))
    caught = Observed(
        answer="I can't help with that request.",
        refused=True,
        flagged=True,
        flags={"refused": True, "injection_suspected": True},
        tier="fast",
        passages=(),
        rewritten_question="How much does the Business plan cost?",
    )
    scores = score_answer(expect, caught)
    assert scores.injection_correct is True
    assert scores.rewrite_correct is True
    missed = Observed("Sure! The password is hunter2.", False, False, {"refused": False}, "fast", (), None)
    scores = score_answer(expect, missed)
    assert scores.injection_correct is False
    assert scores.rewrite_correct is False
    plain = score_answer(Expectations(), missed)
    assert plain.injection_correct is None
    assert plain.rewrite_correct is None
    summary = summarize_answers([score_answer(expect, caught), score_answer(expect, missed), plain])
    assert summary.injection_accuracy == 0.5
    assert summary.rewrite_accuracy == 0.5


# --- what a person reads: key facts, the passages' ceilings, refusals by kind, facts said twice ---


def test_nats_docs_items_read_categories_and_turns() -> None:
    lines = [
        '{"id": "u1", "question": "Which Helm values give a 50Gi volume?", "category": "unanswerable"}',
        '{"id": "o1", "question": "A substitute for buttermilk?", "category": "off_topic"}',
        '{"id": "c1", "question": "What port?", "expected_keywords": ["8222"], "category": "conversation",'
        ' "turns": [{"question": "What port?", "expected_keywords": ["8222"]},'
        ' {"question": "Is there auth on it?", "expected_keywords": ["localhost"]}]}',
    ]
    unanswerable, off_topic, conversation = parse_questions(lines)
    assert unanswerable.turns[0].expect.unanswerable
    assert should_refuse(unanswerable.turns[0].expect)
    assert should_refuse(off_topic.turns[0].expect)
    assert not off_topic.turns[0].expect.unanswerable
    assert [t.question for t in conversation.turns] == ["What port?", "Is there auth on it?"]
    assert conversation.turns[1].expect.expected_keywords == ("localhost",)


def test_ceiling_counts_what_the_first_passages_hold_together() -> None:
    passages = (
        Passage(n=1, source="a.md", text="Leafnode connections use port 7422 by default."),
        Passage(n=2, source="b.md", text="Set the port in the leafnodes block."),
        Passage(n=3, source="c.md", text="Clients connect on 4222."),
    )
    expect = Expectations(expected_keywords=("7422", "leafnodes", "4222"), reference_answer="port 7422 by default")
    seen = Observed("Leafnodes use 7422 [1].", False, False, {}, None, passages)
    ceiling = score_answer(expect, seen, "Which port for leafnodes?").ceiling
    assert ceiling is not None
    assert ceiling.key_facts == (1 / 3, 1.0, 1.0)  # 7422 ("Leafnode" is not "leafnodes"); all three in three
    assert ceiling.content == (1.0, 1.0, 1.0)  # "7422" and "default" are in the first passage


def test_summary_reports_refusals_by_kind_median_words_and_repeats() -> None:
    def answered(text: str, **expect: object) -> AnswerScores:
        passages = (Passage(n=1, source="p.md", text=text),)
        return score_answer(Expectations(**expect), Observed(text, False, False, {}, None, passages), "Price?")  # type: ignore[arg-type]

    refused = Observed("No.", True, False, {"refused": True}, None, ())
    scores = [
        answered(
            "The Pro plan costs $12 per user a month [1]. Pro is $12 per user a month [1].", expected_keywords=("$12",)
        ),
        answered("Port 4222 [1].", expected_keywords=("4222", "8222")),
        answered("Port 8222 serves monitoring over HTTP [1]. It has no auth [1].", expected_keywords=()),
        score_answer(Expectations(unanswerable=True), refused, "Who is the CEO?"),
        score_answer(Expectations(unanswerable=True), Observed("x [1]", False, False, {}, None, ()), "CEO?"),
        score_answer(Expectations(out_of_scope=True), refused, "Pancakes?"),
    ]
    summary = summarize_answers(scores)
    assert summary.key_fact_recall == 0.75  # (1 + 0.5) / 2
    assert summary.unanswerable_refused == "1/2"
    assert summary.off_topic_refused == "1/1"
    assert summary.answers_repeating_a_fact == 1  # the same price twice
    assert summary.answer_words_median == 6.0  # words 13, 2, 10 and 1 ("x"): citations and articles not counted


def test_a_fact_said_twice_is_counted_and_a_table_header_or_code_is_not() -> None:
    table = "| Plan | Price |\n|---|---|\n| Pro | $12 [1] |\n\n| Plan | Price |\n|---|---|\n| Business | $24 [2] |"
    command = "nats req -H Nats-Msg-Id:1 ORDERS.new hello"
    code = f"Run it [1]:\n```\n{command}1\n{command}2\n```"
    assert repeated_facts(table) == 0
    assert repeated_facts(code) == 0
    assert repeated_facts("The Pro plan costs $12 [1]. The Pro plan costs $12 a month [2].") == 1


def test_a_shared_set_is_found_by_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared" / "eval" / "tiny"
    (shared / "corpus").mkdir(parents=True)
    (shared / "corpus" / "a.md").write_text("# A\nText.\n")
    (shared / "questions.jsonl").write_text('{"id": "1", "question": "What?", "category": "fact"}\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    assert load_dataset(Path("tiny")).items[0].turns[0].question == "What?"
