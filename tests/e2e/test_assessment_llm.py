"""Assessment questions written by a model: a JSON-schema prompt per type, against the local
OpenAI-compatible test server (real HTTP through LiteLLM)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import QuestionSpec
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from rag_generator.assessing import parse_model_question
from tests.e2e.test_assessments import BILLING
from tests.support.fake_llm import FakeLLM
from tests.support.http import parse_sse, upload_and_wait
from tests.support.system import stack_options

pytestmark = pytest.mark.e2e

QUOTE = "The Pro plan costs $12 per user per month and keeps 90 days of history."
MODEL_MCQ = {
    "stem": "Identify the monthly price per user of the Pro plan.",
    "options": ["$12", "$15", "$19", "$30"],
    "answer_index": 0,
    "quote": QUOTE,
}


async def test_a_model_writes_the_question_from_a_json_schema_prompt(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    async with FakeLLM(chunks=[json.dumps(MODEL_MCQ)]) as llm:
        options = stack_options(
            tmp_path,
            nats_server.url,
            model_dir,
            generator={"model_fast": "openai/fake-small", "api_base": llm.base_url, "api_key": "k", "num_retries": 0},
        )
        async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=120) as client:
            await upload_and_wait(client, "billing.md", BILLING)
            created = await client.post("/v1/assessments", json={"counts": {"mcq": 1}, "units": ["Billing > Plans"]})
            events = parse_sse((await client.get(f"/v1/assessments/{created.json()['id']}/events")).text)
    kind, state = events[-1]
    assert kind == "done", state
    assert len(state["questions"]) == 1, (state["counts"], state["dropped"])
    (question,) = state["questions"]
    assert question["model"] == "openai/fake-small"
    assert question["rule"] == "model"
    assert question["stem"] == MODEL_MCQ["stem"]
    assert question["answer"] == "$12"
    assert question["validation"]["valid"] is True
    assert question["citations"][0]["source"] == "billing.md"
    assert question["citations"][0]["quote"] == QUOTE
    sent = llm.requests[-1]
    assert sent["model"] == "fake-small"
    schema = sent["response_format"]["json_schema"]
    assert schema["name"] == "mcq_question"
    assert set(schema["schema"]["required"]) == {"stem", "options", "answer_index", "quote"}
    assert "remember" in sent["messages"][0]["content"]
    assert QUOTE in sent["messages"][1]["content"]


def test_an_answer_off_the_schema_or_quoting_nothing_is_refused() -> None:
    spec = QuestionSpec(index=0, kind="mcq")
    passage = Passage(n=1, source="billing.md", section="Plans", text=QUOTE)
    assert parse_model_question(spec, [passage], "Sure! Here is a question.", "m") is None
    invented = {**MODEL_MCQ, "quote": "The Pro plan is free forever."}
    assert parse_model_question(spec, [passage], json.dumps(invented), "m") is None
    written = parse_model_question(spec, [passage], json.dumps(MODEL_MCQ), "m")
    assert written is not None
    assert written.options[written.answer_index or 0] == "$12"
