"""The LiteLLM call: one model per tier, fallbacks and retries, token streaming, usage and cost."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from rag_common.wire.messages import Usage
from rag_generator.settings import GeneratorSettings

log = logging.getLogger(__name__)


@dataclass
class Completion:
    text: str
    model: str
    usage: Usage
    stopped: bool = False  # the caller stopped reading before the model finished


class StopStream(Exception):
    """Raised by ``on_token`` to stop reading the model's stream (its output is not wanted)."""


async def stream_completion(
    settings: GeneratorSettings,
    model: str,
    messages: list[dict[str, str]],
    on_token: Callable[[str], Awaitable[None]],
) -> Completion:
    """Stream a chat completion, calling ``on_token`` for each text delta as it arrives; ``on_token``
    raises ``StopStream`` to stop reading (the completion then holds the text so far)."""
    import litellm

    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "timeout": settings.timeout_s,
        "num_retries": settings.num_retries,
    }
    if settings.fallbacks:
        kwargs["fallbacks"] = settings.fallbacks
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    if settings.api_key:
        kwargs["api_key"] = settings.api_key.get_secret_value()
    response = await litellm.acompletion(**kwargs)
    parts: list[str] = []
    usage = Usage()
    stopped = False
    async for chunk in _chunks(response):
        if chunk.choices:
            delta = chunk.choices[0].delta
            text = getattr(delta, "content", None)
            if text:
                parts.append(text)
                try:
                    await on_token(text)
                except StopStream:
                    stopped = True
                    break
        raw_usage = getattr(chunk, "usage", None)
        if raw_usage:
            usage = Usage(
                input_tokens=int(getattr(raw_usage, "prompt_tokens", 0) or 0),
                output_tokens=int(getattr(raw_usage, "completion_tokens", 0) or 0),
            )
    text = "".join(parts)
    if stopped and not usage.output_tokens:
        usage.output_tokens = len(parts)  # the usage chunk comes last; one delta is about one token
    usage.cost_usd = _cost(model, usage)
    return Completion(text=text, model=model, usage=usage, stopped=stopped)


async def _chunks(response: Any) -> AsyncIterator[Any]:
    async for chunk in response:
        yield chunk


def _cost(model: str, usage: Usage) -> float:
    """Cost from LiteLLM's local price map; 0.0 for models it does not price (e.g. local servers)."""
    import litellm

    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=usage.input_tokens, completion_tokens=usage.output_tokens
        )
    except Exception:  # unknown model: LiteLLM raises a bare Exception subclass
        return 0.0
    return round(float(prompt_cost + completion_cost), 8)
