"""OpenAI message lists as a question plus conversation turns."""

from __future__ import annotations

import pytest

from rag_gateway.api.openai import ChatMessage, conversation_of
from rag_gateway.errors import ApiError

pytestmark = pytest.mark.unit


def msgs(*pairs: tuple[str, object]) -> list[ChatMessage]:
    return [ChatMessage.model_validate({"role": role, "content": content}) for role, content in pairs]


def test_last_user_message_is_the_question_and_pairs_become_turns() -> None:
    question, turns = conversation_of(
        msgs(
            ("system", "Be brief."),
            ("user", "How much is Pro?"),
            ("assistant", "$12 per user per month [1]."),
            ("user", [{"type": "text", "text": "And per year?"}]),
        )
    )
    assert question == "And per year?"
    assert [(t.question, t.answer) for t in turns] == [("How much is Pro?", "$12 per user per month [1].")]


def test_unanswered_user_message_is_a_turn_without_answer() -> None:
    _, turns = conversation_of(msgs(("user", "first"), ("user", "second"), ("assistant", "reply"), ("user", "third")))
    assert [(t.question, t.answer) for t in turns] == [("first", ""), ("second", "reply")]


@pytest.mark.parametrize(
    "messages",
    [
        msgs(("system", "only a system prompt")),
        msgs(("user", "hi"), ("assistant", "hello")),
        msgs(("user", "   ")),
    ],
)
def test_a_conversation_must_end_with_a_user_question(messages: list[ChatMessage]) -> None:
    with pytest.raises(ApiError) as caught:
        conversation_of(messages)
    assert caught.value.status == 422
    assert caught.value.param == "messages"
