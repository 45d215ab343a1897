"""Unit tests for follow-up rewriting by rules: what the retriever searches for after a follow-up."""

from __future__ import annotations

import pytest

from rag_common.wire.messages import Turn
from rag_retriever.followup import rewrite_followup, subject_of

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("earlier", "followup", "standalone"),
    [
        ("What does the Business plan include?", "And how much does it cost?", "How much does the Business plan cost?"),
        (
            "How does the GitHub integration work?",
            "Is it available on the Free plan?",
            "Is the GitHub integration available on the Free plan?",
        ),
        (
            "What is the API rate limit?",
            "What happens if I go over it?",
            "What happens if I go over the API rate limit?",
        ),
        ("How much does the Business plan cost?", "What about Enterprise?", "How much does the Enterprise plan cost?"),
        (
            "How much does the Business plan cost?",
            "And for annual plans?",
            "How much does the Business plan cost for annual plans?",
        ),
        (
            "How fast is a Sev1 incident answered for Enterprise customers?",
            "And Sev2?",
            "How fast is a Sev2 incident answered for Enterprise customers?",
        ),
        ("What does the Business plan include?", "How much?", "How much does the Business plan cost?"),
        (
            "What uptime does the Enterprise SLA promise?",
            "And what about the Business plan?",
            "What uptime does the Business SLA promise?",
        ),
        (
            "How long is the audit log kept on the Business plan?",
            "And on Enterprise?",
            "How long is the audit log kept on Enterprise?",
        ),
        (
            "What is the maximum file upload size on the Free plan?",
            "And on paid plans?",
            "What is the maximum file upload size on paid plans?",
        ),
        ("Is there a discount for nonprofits?", "How do I apply for it?", "How do I apply for the discount?"),
        ("How do I export my data?", "What format is it in?", "What format is the data in?"),
    ],
)
def test_a_followup_becomes_a_standalone_question(earlier: str, followup: str, standalone: str) -> None:
    rewrite = rewrite_followup(followup, [Turn(question=earlier, answer="...")])
    assert rewrite is not None
    assert rewrite.question == standalone


@pytest.mark.parametrize(
    "question",
    [
        "How do I reset my password?",  # names its own subject
        "Is it possible to export a project as CSV?",  # "it" stands for nothing
        "Does the Slack integration post when it fails?",  # the pronoun refers inside the question
        "How long does it take to move a workspace to the EU?",
    ],
)
def test_a_question_that_stands_alone_is_left_alone(question: str) -> None:
    assert rewrite_followup(question, [Turn(question="What does the Business plan include?")]) is None


def test_without_history_nothing_is_rewritten() -> None:
    assert rewrite_followup("And how much does it cost?", []) is None


def test_the_latest_turn_decides_and_its_standalone_form_is_used() -> None:
    history = [
        Turn(question="What does the Pro plan include?"),
        Turn(question="And the Business plan?", rewritten_question="What does the Business plan include?"),
    ]
    rewrite = rewrite_followup("How much does it cost?", history)
    assert rewrite is not None
    assert rewrite.question == "How much does the Business plan cost?"


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("What does the Business plan include?", "the Business plan"),
        ("What is the API rate limit?", "the API rate limit"),
        ("How does Google Calendar sync work?", "Google Calendar"),
    ],
)
def test_subject_of_an_earlier_question(question: str, subject: str) -> None:
    assert subject_of(question) == subject
