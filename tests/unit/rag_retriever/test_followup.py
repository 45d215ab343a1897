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
        (
            "How do I set up single sign-on?",
            "Which plans is it available on?",
            "Which plans is single sign-on available on?",
        ),
        ("How can I invite guests to a project?", "Do they need a paid seat?", "Do guests need a paid seat?"),
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
        # the whole name of the thing asked about, not the capitalised words alone
        ("How does Google Calendar sync work?", "Google Calendar sync"),
        # the object of the question's verb, not "I" and the verb after it ("I set")
        ("How do I set up single sign-on?", "single sign-on"),
        ("Can I turn on two-factor authentication for everyone?", "two-factor authentication"),
        ("Where do I find the invoices?", "the invoices"),
    ],
)
def test_subject_of_an_earlier_question(question: str, subject: str) -> None:
    assert subject_of(question) == subject


@pytest.mark.parametrize(
    "earlier",
    [
        "How do I set up single sign-on?",
        "Can I turn on two-factor authentication for everyone?",
        "How should we migrate from Trello?",
        "Why did my export fail?",
    ],
)
def test_the_subject_is_a_noun_phrase_never_a_pronoun_with_its_verb(earlier: str) -> None:
    subject = subject_of(earlier).lower().split()
    assert subject
    assert subject[0] not in {"i", "we", "you", "it"}
    assert not {"set", "turn", "migrate", "fail", "do", "did", "should"} & set(subject)
