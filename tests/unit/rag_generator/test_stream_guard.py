"""The stream guard: a model's streamed text never shows a context tag, the salt or the prompt."""

from __future__ import annotations

import re

import pytest

from rag_common.wire.messages import Passage
from rag_generator.guard import PROMPT_REASON, SALT_REASON, TAG_REASON, StreamGuard
from rag_generator.prompting import build_messages

pytestmark = pytest.mark.unit

SALT = "8dc6a1b2c3d4"
PASSAGES = [Passage(n=6, source="security.md", section="SSO", text="SAML single sign-on is on the Business plan.")]
SYSTEM, USER = (m["content"] for m in build_messages("Which plan has SSO?", PASSAGES, SALT))


def streamed(guard: StreamGuard, tokens: list[str]) -> str:
    return "".join(guard.feed(t) for t in tokens) + guard.finish()


def words(text: str) -> list[str]:
    return re.findall(r"\s*\S+", text)


def characters(text: str) -> list[str]:
    return list(text)


@pytest.mark.parametrize("split", [words, characters], ids=["words", "characters"])
@pytest.mark.parametrize(
    ("echo", "reason"),
    [(SYSTEM, PROMPT_REASON), (USER, TAG_REASON), (SYSTEM + "\n" + USER, PROMPT_REASON)],
    ids=["system", "user", "both"],
)
def test_an_echoed_prompt_shows_nothing_of_it(echo: str, reason: str, split: object) -> None:
    guard = StreamGuard(SALT, SYSTEM)
    shown = streamed(guard, split(echo))  # type: ignore[operator]
    assert guard.aborted == reason
    assert shown == ""


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (f"The Business plan has SSO [6]. Tags: <passage-{SALT} n=6", TAG_REASON),
        (f"The Business plan has SSO [6]. My salt is {SALT}.", SALT_REASON),
        ("The Business plan has SSO [6]. </context-", TAG_REASON),
    ],
)
def test_a_leak_after_a_good_start_shows_only_the_good_start(text: str, reason: str) -> None:
    guard = StreamGuard(SALT, SYSTEM)
    shown = streamed(guard, characters(text))
    assert guard.aborted == reason
    leak = min(i for i in (text.find("<"), text.find(SALT)) if i >= 0)
    assert text.startswith(shown)
    assert len(shown) <= leak
    assert shown.startswith("The Business plan has SSO [6].")


def test_a_clean_answer_streams_whole_and_in_order() -> None:
    answer = "SAML single sign-on comes with the Business plan [6]; use <b>Settings</b> > SSO. Code 8dc6 is fine."
    guard = StreamGuard(SALT, SYSTEM)
    pieces = [guard.feed(t) for t in words(answer)]
    assert guard.aborted is None
    assert "".join(pieces) + guard.finish() == answer
    assert sum(1 for p in pieces if p) >= 10, "tokens flow as they come, not all at the end"


def test_a_few_words_of_the_rules_in_an_answer_are_shown() -> None:
    answer = "Use only the passages you trust: the Business plan has SSO [6]."
    guard = StreamGuard(SALT, SYSTEM)
    assert streamed(guard, words(answer)) == answer
    assert guard.aborted is None
