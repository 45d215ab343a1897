"""A tiny OpenAI-compatible chat server on 127.0.0.1 for tests: real HTTP, streaming included.

It answers every chat completion with a fixed text (in several SSE chunks when streaming), or with
``echo=True`` repeats its whole prompt word by word as a tiny local model does, or with
``concise=True`` answers with the one passage sentence that shares the most words with the
question, cited, as a concise model tier does (the answer names one entity's fact, so a cache
that serves it to a question of opposite meaning is plainly wrong). It records the requests, so a
test can check what the generator sent.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from rag_common.text.sentences import split_sentences
from rag_common.text.words import terms

REPLY_CHUNKS = ["Orbitly Pro ", "is billed per user ", "each month [1]."]
# A passage as the generator's prompt frames it (``rag_generator.prompting.format_context``).
PASSAGE = re.compile(r'<passage-[0-9a-f]+ n="(\d+)"[^>]*>\n(.*?)\n</passage-[0-9a-f]+>', re.DOTALL)


def concise_reply(messages: list[dict[str, Any]]) -> str:
    """The passage sentence sharing the most words with the question, cited as ``[n]``; the first on a tie.

    What a concise model writes: one sentence, one entity's fact. With no sentence sharing a word,
    the refusal the system prompt asks for.
    """
    refusal = re.search(r'reply exactly: "(.*)"', str(messages[0].get("content", "")))
    prompt = str(messages[-1].get("content", ""))
    question = terms(prompt.rpartition("Question:")[2])
    best: tuple[int, str, str] | None = None
    for n, text in PASSAGE.findall(prompt):
        for line in text.splitlines():
            for sentence in split_sentences(line.strip().lstrip("-*# ").strip()):
                overlap = len(terms(sentence) & question)
                if overlap and (best is None or overlap > best[0]):
                    best = overlap, sentence, n
    if best is None:
        return refusal.group(1) if refusal else "I don't know."
    _, sentence, n = best
    return f"{sentence.rstrip('.')} [{n}]."


class FakeLLM:
    def __init__(
        self,
        chunks: list[str] | None = None,
        failing_models: frozenset[str] = frozenset(),
        echo: bool = False,
        concise: bool = False,
    ) -> None:
        self.chunks = chunks or REPLY_CHUNKS
        self.echo = echo  # answer with the prompt itself, one word (and its spaces) per chunk
        self.concise = concise  # answer with the best-matching passage sentence (``concise_reply``)
        self.failing_models = failing_models  # these answer 500, as a provider outage would
        self.requests: list[dict[str, Any]] = []
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self._chat)
        self.app.post("/chat/completions")(self._chat)
        self.server: uvicorn.Server | None = None
        self.task: asyncio.Task[None] | None = None
        self.base_url = ""

    async def _chat(self, request: Request) -> Any:
        body = await request.json()
        self.requests.append(body)
        model = body.get("model", "fake")
        if model in self.failing_models:
            return JSONResponse({"error": {"message": "provider outage", "type": "server_error"}}, status_code=500)
        created = int(time.time())
        chunks = self.chunks
        if self.echo:
            prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            chunks = re.findall(r"\s*\S+", prompt)
        if self.concise:
            chunks = re.findall(r"\s*\S+", concise_reply(body.get("messages", [])))
        if not body.get("stream"):
            return JSONResponse(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "".join(chunks)},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
                }
            )

        async def events() -> AsyncIterator[str]:
            for i, text in enumerate(chunks):
                delta = {"role": "assistant", "content": text} if i == 0 else {"content": text}
                chunk = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n"
            end = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
            yield f"data: {json.dumps(end)}\n\n"
            usage = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
            }
            yield f"data: {json.dumps(usage)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def __aenter__(self) -> FakeLLM:
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning"))
        self.task = asyncio.create_task(self.server.serve())
        deadline = time.monotonic() + 10
        while not self.server.started:
            if self.task.done() or time.monotonic() > deadline:
                raise RuntimeError("fake LLM server did not start")
            await asyncio.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.server and self.task:
            self.server.should_exit = True
            await self.task
