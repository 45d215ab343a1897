"""Messages of the query path: one model per stage, each extending the one before.

A stage receives the previous stage's model and publishes its own, so every field a later stage or
the gateway needs travels with the question and nothing is looked up twice.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rag_common.messages.base import Message, Timed

# "greeting" and "blocked" (a prompt-injection attempt, refused) skip retrieval and the model.
Tier = Literal["fast", "strong", "greeting", "blocked"]


class Passage(BaseModel):
    """A retrieved chunk as the client sees it in ``passages`` and ``citations``."""

    model_config = ConfigDict(extra="ignore")

    n: int
    source: str
    section: str = ""
    page: int | None = None
    chunk_index: int = 0
    score: float = 0.0
    text: str = ""
    document_id: str = ""
    similarity: float = 0.0  # dense cosine similarity to the question, used for the refusal threshold
    kind: str = "text"
    # Character ranges of instruction-like text planted in the chunk (marked at ingest): never quoted.
    injection_spans: list[tuple[int, int]] = Field(default_factory=list)


class Route(BaseModel):
    """The router's decision and why, shown to the client verbatim."""

    tier: Tier
    model: str = ""
    score: int = 0
    signals: dict[str, int] = Field(default_factory=dict)
    reason: str = ""


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class Turn(BaseModel):
    """One earlier exchange of a conversation: what was asked (and what it meant) and the answer."""

    model_config = ConfigDict(extra="ignore")

    question: str
    answer: str = ""
    rewritten_question: str | None = None  # the standalone form the retriever searched with
    sources: list[str] = Field(default_factory=list)


class QueryRequested(Timed):
    type: str = "rag.query.requested.v1"
    gateway_id: str
    question: str
    session_id: str | None = None
    # Earlier turns given by the caller (e.g. an OpenAI-style message list). When set they are the
    # conversation; otherwise the retriever reads the session's turns from the sessions bucket.
    history: list[Turn] | None = None
    collection: str = "default"
    filters: dict[str, Any] = Field(default_factory=dict)
    selected_text: str | None = None
    trace_id: str = ""


class QueryRouted(QueryRequested):
    type: str = "rag.query.routed.v1"
    route: Route
    canned_answer: str | None = None  # set for greetings: no retrieval, no LLM
    # Why this exchange looks like prompt injection ("question: override", "output: secret"); stages
    # append, the evaluator raises ``injection_suspected`` from it.
    suspicions: list[str] = Field(default_factory=list)


class QueryRetrieved(QueryRouted):
    type: str = "rag.query.retrieved.v1"
    rewritten_question: str | None = None  # the follow-up made standalone; None when it was one
    threshold: float = 0.0  # the collection's calibrated relevance threshold the passages were held to
    low_confidence: str | None = None  # why the passages only just passed, when they did
    passages: list[Passage] = Field(default_factory=list)
    refused: bool = False
    refusal_reason: str | None = None


class QueryDrafted(QueryRetrieved):
    type: str = "rag.query.drafted.v1"
    answer: str
    model: str
    citations: list[Passage] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


class QueryAnswer(Timed):
    """The final answer, exactly the JSON body of ``POST /v1/query``."""

    type: str = "rag.answer.final.v1"
    answer: str
    model: str
    citations: list[Passage]
    passages: list[Passage]
    route: Route
    flags: dict[str, bool]
    flag_details: dict[str, Any] = Field(default_factory=dict)
    flagged: bool
    usage: Usage
    trace_id: str = ""
    collection: str = "default"
    session_id: str | None = None
    rewritten_question: str | None = None


class AnswerDelta(Message):
    """One streamed piece of answer text; ``attempt`` tells deltas of a redelivered stage apart."""

    type: str = "rag.answer.delta.v1"
    request_id: str
    attempt: str
    seq: int
    text: str


class AnswerError(Message):
    """A query that cannot be answered; ``status`` is the HTTP status the gateway returns."""

    type: str = "rag.answer.error.v1"
    request_id: str
    code: str
    message: str
    status: int = 500


M = TypeVar("M", bound=QueryRequested)


def advance(target: type[M], previous: QueryRequested, /, **fields: Any) -> M:
    """Build the next stage's message from the previous one, keeping every field it carried."""
    data = previous.model_dump(exclude={"type"})
    data.update(fields)
    return target.model_validate(data)
