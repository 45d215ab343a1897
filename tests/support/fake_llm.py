"""A tiny OpenAI-compatible chat server on 127.0.0.1 for tests: real HTTP, streaming included.

It answers every chat completion with a fixed text (in several SSE chunks when streaming), or with
``echo=True`` repeats its whole prompt word by word as a tiny local model does, and records the
requests, so a test can check what the generator sent.
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

REPLY_CHUNKS = ["Orbitly Pro ", "is billed per user ", "each month [1]."]


class FakeLLM:
    def __init__(
        self, chunks: list[str] | None = None, failing_models: frozenset[str] = frozenset(), echo: bool = False
    ) -> None:
        self.chunks = chunks or REPLY_CHUNKS
        self.echo = echo  # answer with the prompt itself, one word (and its spaces) per chunk
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
