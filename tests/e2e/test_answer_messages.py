"""What travels back to the gateway per question: token deltas only for callers that stream.

Watched on the real nats-server the system runs on, beside the gateway's own subscription.
"""

from __future__ import annotations

import json
from collections import Counter

import httpx
import nats
import pytest
from nats.aio.msg import Msg

from rag_common.wire import subjects
from tests.support.http import ask, parse_sse
from tests.support.system import System

pytestmark = pytest.mark.e2e

QUESTION = "What is the API rate limit per token?"


async def test_only_streaming_callers_get_token_deltas_on_the_wire(system: System, client: httpx.AsyncClient) -> None:
    seen: Counter[tuple[str, str]] = Counter()

    async def watch(msg: Msg) -> None:
        request_id, kind = msg.subject.split(".")[-2:]
        seen[request_id, kind] += 1

    nc = await nats.connect(system.stack.nats_url)
    try:
        await nc.subscribe(f"{subjects.ANSWER_PREFIX}.>", cb=watch)
        await nc.flush()
        plain = await ask(client, QUESTION)
        streamed = await client.post("/v1/query/stream", json={"question": QUESTION})
        done = parse_sse(streamed.text)[-1][1]
        chat = await client.post(
            "/v1/chat/completions",
            json={"model": "default", "messages": [{"role": "user", "content": QUESTION}], "stream": True},
        )
        chat_id = json.loads(chat.text.split("data: ")[1])["id"].removeprefix("chatcmpl-")
        await nc.flush()
    finally:
        await nc.close()
    # The plain question's deltas, had any been sent, would have come long before the later
    # questions' (the generator sends them before its drafted message).
    assert seen[plain["request_id"], "final"] == 1
    assert seen[plain["request_id"], "delta"] == 0, "POST /v1/query waits for the final answer: no deltas"
    assert seen[done["request_id"], "final"] == 1
    assert seen[done["request_id"], "delta"] >= 2
    assert seen[chat_id, "final"] == 1
    assert seen[chat_id, "delta"] >= 2
    assert plain["answer"] == done["answer"]
