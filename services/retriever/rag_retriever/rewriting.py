"""Follow-up rewriting with the configured LLM, falling back to the rules when there is none."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from typing import Any

from rag_common.wire.messages import Turn
from rag_retriever.followup import Rewrite, rewrite_followup
from rag_retriever.settings import RetrieverSettings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
log = logging.getLogger("rag.retriever")

INSTRUCTIONS = (
    "Rewrite the user's last question as one standalone question that can be understood without the "
    "conversation, keeping its meaning and language. If it already stands alone, repeat it unchanged. "
    "Reply with the question only."
)
_TURNS = 4


def rewrite_messages(question: str, history: Sequence[Turn]) -> list[dict[str, str]]:
    """The chat messages that ask a model for the standalone question (pure)."""
    lines = []
    for turn in history[-_TURNS:]:
        lines.append(f"User: {turn.rewritten_question or turn.question}")
        if turn.answer:
            lines.append(f"Assistant: {turn.answer[:400]}")
    conversation = "\n".join(lines)
    return [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": f"Conversation:\n{conversation}\n\nLast question: {question}"},
    ]


async def rewrite(question: str, history: Sequence[Turn], settings: RetrieverSettings) -> Rewrite | None:
    """The standalone question: the model's when one is configured (rules if it fails), else the rules'."""
    if not history:
        return None
    if settings.rewrite_model:
        try:
            text = await _ask_model(question, history, settings)
        except Exception as exc:  # a rewrite is an improvement, never a reason to fail the question
            log.warning("follow-up rewrite by %s failed, using rules: %s", settings.rewrite_model, exc)
        else:
            text = text.strip().strip('"').strip()
            if text and len(text) <= 4 * len(question) + 400 and text != question:
                return Rewrite(text, "llm")
            if text == question:
                return None
    # Off the event loop: the rules parse the previous question, and the first parse loads the parser.
    return await asyncio.to_thread(rewrite_followup, question, history)


async def _ask_model(question: str, history: Sequence[Turn], settings: RetrieverSettings) -> str:
    import litellm

    kwargs: dict[str, Any] = {
        "model": settings.rewrite_model,
        "messages": rewrite_messages(question, history),
        "temperature": 0.0,
        "max_tokens": 128,
        "timeout": settings.rewrite_timeout_s,
        "num_retries": 1,
    }
    if settings.rewrite_api_base:
        kwargs["api_base"] = settings.rewrite_api_base
    if settings.rewrite_api_key:
        kwargs["api_key"] = settings.rewrite_api_key.get_secret_value()
    response = await litellm.acompletion(**kwargs)
    return str(response.choices[0].message.content or "")
