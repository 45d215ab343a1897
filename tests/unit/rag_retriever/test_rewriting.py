"""Follow-up rewriting with a configured model: its answer, the rules when it fails, never a failure."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import litellm
import pytest

from rag_common.wire.messages import Turn
from rag_retriever.rewriting import rewrite, rewrite_messages
from rag_retriever.settings import RetrieverSettings

pytestmark = pytest.mark.unit

HISTORY = [Turn(question="What does the Business plan include?", answer="SAML SSO, a 90-day audit log [1].")]


def reply(text: str) -> Any:
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text))])


async def test_the_models_standalone_question_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    async def model(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return reply('"How much does the Business plan cost per user?"')

    monkeypatch.setattr(litellm, "acompletion", model)
    settings = RetrieverSettings(rewrite_model="openai/test", metrics_port=0)
    result = await rewrite("And how much does it cost?", HISTORY, settings)
    assert result is not None
    assert (result.question, result.rule) == (
        "How much does the Business plan cost per user?",
        "llm",
    )
    assert seen[0]["model"] == "openai/test"
    assert seen[0]["temperature"] == 0.0
    assert "User: What does the Business plan include?" in seen[0]["messages"][1]["content"]


async def test_a_failing_model_falls_back_to_the_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    async def down(**kwargs: Any) -> Any:
        raise litellm.exceptions.APIConnectionError(message="down", llm_provider="openai", model="test")

    monkeypatch.setattr(litellm, "acompletion", down)
    settings = RetrieverSettings(rewrite_model="openai/test", metrics_port=0)
    result = await rewrite("And how much does it cost?", HISTORY, settings)
    assert result is not None
    assert (result.question, result.rule) == ("How much does the Business plan cost?", "pronoun")


async def test_a_standalone_question_repeated_by_the_model_is_not_a_rewrite(monkeypatch: pytest.MonkeyPatch) -> None:
    async def same(**kwargs: Any) -> Any:
        return reply("How do I reset my password?")

    monkeypatch.setattr(litellm, "acompletion", same)
    settings = RetrieverSettings(rewrite_model="openai/test", metrics_port=0)
    assert await rewrite("How do I reset my password?", HISTORY, settings) is None


def test_the_prompt_carries_the_last_turns_in_their_standalone_form() -> None:
    history = [Turn(question=f"q{i}", rewritten_question=f"standalone q{i}", answer="a" * 1000) for i in range(6)]
    content = rewrite_messages("And then?", history)[1]["content"]
    assert "standalone q5" in content
    assert "standalone q1" not in content
    assert "a" * 401 not in content  # answers shortened
