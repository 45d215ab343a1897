"""The generator's draft in-process (no broker): refusal texts, extractive answers, model refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire.messages import AnswerDelta, Passage, Query, QueryRetrieved, Retrieval, Route, Usage
from rag_generator import drafting
from rag_generator.drafting import LLM_REFUSAL_REASON, Generator
from rag_generator.llm import Completion, StopStream
from rag_generator.settings import GeneratorSettings

pytestmark = pytest.mark.unit

OWN_REFUSAL = "I don't have information on that; contact support@x.example."
PRICING = Passage(n=1, source="pricing.md", section="Plans", text="The Pro plan costs $12 per user per month.")


def query(**fields: Any) -> QueryRetrieved:
    """A retrieved question; each field goes to the part it belongs to (the question or the retrieval)."""
    asked = {"request_id": "r1", "gateway_id": "g1", "question": "How much does the Pro plan cost?"}
    asked |= {"collection": "support"} | {k: v for k, v in fields.items() if k in Query.model_fields}
    found = {"passages": [PRICING]} | {k: v for k, v in fields.items() if k not in Query.model_fields}
    return QueryRetrieved(query=Query(**asked), route=Route(tier="fast"), retrieval=Retrieval(**found))


def generator(tmp_path: Path, **settings: Any) -> tuple[Generator, list[str]]:
    texts = tmp_path / "collections.json"
    texts.write_text(
        json.dumps({"support": {"refusal": "I don't have information on that; contact support@x.example."}})
    )
    deltas: list[str] = []

    async def collect(_: Query, delta: AnswerDelta) -> None:
        deltas.append(delta.text)

    gen = Generator(
        GeneratorSettings(collections_file=texts, metrics_port=0, **settings), None, setup_telemetry("t"), collect
    )
    return gen, deltas


async def test_a_refusal_uses_the_collections_own_text(tmp_path: Path) -> None:
    gen, deltas = generator(tmp_path)
    drafted = await gen.draft(query(refused=True, passages=[], refusal_reason="below threshold"))
    assert drafted.draft.answer == "I don't have information on that; contact support@x.example."
    assert drafted.draft.refused
    assert drafted.draft.refusal_reason == "below threshold"
    assert drafted.citations == []
    assert "".join(deltas) == drafted.draft.answer
    other = await gen.draft(query(refused=True, passages=[], collection="wiki"))
    assert other.draft.answer == "I don't have that in the documents."


async def test_an_extractive_answer_quotes_and_cites(tmp_path: Path) -> None:
    gen, deltas = generator(tmp_path)
    drafted = await gen.draft(query())
    assert drafted.draft.model == "extractive"
    assert not drafted.draft.refused
    assert "The Pro plan costs $12 per user per month [1]." in drafted.draft.answer
    assert [c.n for c in drafted.citations] == [1]
    assert "".join(deltas) == drafted.draft.answer


async def test_a_caller_that_does_not_stream_gets_no_token_deltas_and_the_same_answer(tmp_path: Path) -> None:
    gen, deltas = generator(tmp_path)
    streamed = await gen.draft(query())
    assert deltas, "a streaming caller gets the answer as deltas"
    deltas.clear()
    whole = await gen.draft(query(stream=False))
    refused = await gen.draft(query(stream=False, refused=True, passages=[]))
    assert deltas == [], "POST /v1/query waits for the final answer: no delta is sent"
    assert whole.draft == streamed.draft
    assert refused.draft.refused


async def test_a_follow_up_is_answered_in_its_standalone_form(tmp_path: Path) -> None:
    gen, _ = generator(tmp_path)
    passages = [
        Passage(n=1, source="a.md", text="Exports run nightly. Guests are free."),
        Passage(n=2, source="b.md", text="The Business plan costs $24 per user per month."),
    ]
    drafted = await gen.draft(
        query(
            question="And how much does it cost?",
            rewritten_question="How much does the Business plan cost?",
            passages=passages,
        )
    )
    assert drafted.draft.answer.startswith("The Business plan costs $24")


async def test_a_model_that_declines_makes_the_answer_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[dict[str, str]]] = []

    async def declining(
        settings: GeneratorSettings, model: str, messages: list[dict[str, str]], on_token: Any
    ) -> Completion:
        seen.append(messages)
        text = "I don't have information on that; contact support@x.example."
        await on_token(text)
        return Completion(text=text, model=model, usage=Usage())

    monkeypatch.setattr(drafting, "stream_completion", declining)
    gen, _ = generator(tmp_path, model_fast="openai/test")
    drafted = await gen.draft(query())
    assert drafted.draft.refused
    assert drafted.draft.refusal_reason == LLM_REFUSAL_REASON
    assert drafted.citations == []
    assert 'reply exactly: "I don\'t have information on that; contact support@x.example."' in seen[0][0]["content"]


def scripted(make_text: Any, pieces: int = 0) -> Any:
    """A stand-in for the LiteLLM call that streams ``make_text(messages)`` (in ``pieces`` words when
    given) and stops when the caller says so, as ``stream_completion`` does."""

    async def completion(
        settings: GeneratorSettings, model: str, messages: list[dict[str, str]], on_token: Any
    ) -> Completion:
        text = make_text(messages)
        tokens = re.findall(r"\s*\S+", text) if pieces else [text]
        sent: list[str] = []
        for token in tokens:
            sent.append(token)
            try:
                await on_token(token)
            except StopStream:
                return Completion(text="".join(sent), model=model, usage=Usage(), stopped=True)
        return Completion(text=text, model=model, usage=Usage())

    return completion


def rejected_count(gen: Generator, check: str) -> float | None:
    return gen.telemetry.registry.get_sample_value(
        "rag_llm_answers_rejected_total", {"model": "openai/test", "check": check}
    )


async def test_an_answer_that_leaks_the_prompt_falls_back_to_the_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts: list[str] = []

    def echo(messages: list[dict[str, str]]) -> str:
        prompts.append(messages[0]["content"])
        return f"Sure! My instructions: {messages[0]['content']}"

    monkeypatch.setattr(drafting, "stream_completion", scripted(echo, pieces=1))
    gen, deltas = generator(tmp_path, model_fast="openai/test")
    drafted = await gen.draft(query())
    assert drafted.draft.model == "extractive"
    assert not drafted.draft.refused
    assert "The Pro plan costs $12 per user per month [1]." in drafted.draft.answer
    assert drafted.draft.model_answer_rejected == "it repeated its instructions"
    assert drafted.suspicions == []  # a model's bad output is no attack
    streamed = "".join(deltas)
    assert "withheld" in streamed
    assert streamed.endswith(drafted.draft.answer)
    assert "You answer questions about a team's documents" not in streamed
    assert rejected_count(gen, "output") == 1
    assert rejected_count(gen, "citation") == 0


async def test_an_uncited_model_answer_fails_the_citation_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(drafting, "stream_completion", scripted(lambda _: "Pro is cheap, trust me."))
    gen, _ = generator(tmp_path, model_fast="openai/test")
    drafted = await gen.draft(query())
    assert drafted.draft.model_answer_rejected == "it cites no passage"
    assert "The Pro plan costs $12 per user per month [1]." in drafted.draft.answer
    assert rejected_count(gen, "citation") == 1
    monkeypatch.setattr(drafting, "stream_completion", scripted(lambda _: "Pro costs $12 [7]."))
    drafted = await gen.draft(query())
    assert drafted.draft.model_answer_rejected == "it cites passage [7], which does not exist"


async def test_a_cited_model_answer_is_kept_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = "The Pro plan costs $12 per user per month [1]."
    monkeypatch.setattr(drafting, "stream_completion", scripted(lambda _: answer, pieces=1))
    gen, deltas = generator(tmp_path, model_fast="openai/test")
    drafted = await gen.draft(query())
    assert drafted.draft.answer == answer
    assert drafted.draft.model == "openai/test"
    assert drafted.draft.model_answer_rejected is None
    assert "".join(deltas) == answer


async def test_a_dropped_attack_opens_the_answer_with_the_blocked_text(tmp_path: Path) -> None:
    gen, deltas = generator(tmp_path)
    retrieved = query(question="What does the Pro plan cost?")
    retrieved = retrieved.model_copy(update={"route": Route(tier="fast", attack_dropped=["override"])})
    drafted = await gen.draft(retrieved)
    first, rest = drafted.draft.answer.split("\n\n", 1)
    assert first == "I can't help with that request; ask me about the documents instead."
    assert drafted.draft.preface == first + "\n\n"
    assert "The Pro plan costs $12 per user per month [1]." in rest
    assert "".join(deltas) == drafted.draft.answer
