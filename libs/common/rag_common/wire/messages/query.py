"""Messages of the query path: the question once, and each stage its own part.

Every stage message carries the ``Query`` as the gateway asked it (never copied field by field,
never re-validated in-process: the next stage's message holds the same object) plus what the stages
so far decided: the ``Route`` (router), the ``Retrieval`` (retriever), the ``Draft`` (generator).
The evaluator adds the ``Evaluation`` to the drafted message's parts (``QueryAnswered``). No message
extends another (they share only the bases ``StageMessage`` and ``DraftedStage``), so a stage cannot
confuse one stage's message with the next one's, and ``type`` is a ``Literal``: a message on the
wrong subject fails validation instead of passing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializationInfo, field_serializer

from rag_common.config.texts import CollectionTexts
from rag_common.wire.messages.base import Message
from rag_common.wire.messages.chunk import ChunkKind, ChunkPayload
from rag_common.wire.messages.flags import Flag
from rag_common.wire.names import Collection

# "greeting" and "blocked" (a prompt-injection attempt, refused) skip retrieval and the model.
Tier = Literal["fast", "strong", "greeting", "blocked"]


class Passage(BaseModel):
    """A retrieved chunk, numbered as the answer cites it: the one shape of a passage everywhere
    (stage messages, the answer's ``passages`` and ``citations``, the evaluator's checks).
    """  # noqa: D205 (the text is the model's published schema description)

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
    kind: ChunkKind = "text"
    # Character ranges of instruction-like text planted in the chunk (marked at ingest): never quoted.
    injection_spans: list[tuple[int, int]] = Field(default_factory=list)
    withheld: bool = Field(
        False,
        description="the passage holds text planted to instruct the assistant: in an answer's body each such "
        "range of text is replaced by a notice ([withheld: ...]), and injection_spans give the notices' ranges",
    )

    @classmethod
    def from_chunk(cls, n: int, chunk: ChunkPayload, *, score: float, similarity: float) -> Passage:
        """The passage numbered ``n`` built from a stored chunk's payload."""
        return cls(
            n=n,
            source=chunk.source,
            section=chunk.section,
            page=chunk.page,
            chunk_index=chunk.chunk_index,
            score=round(score, 6),
            similarity=round(similarity, 4),
            text=chunk.text,
            document_id=chunk.document_id,
            kind=chunk.kind,
            injection_spans=list(chunk.injection_spans),
        )


class Route(BaseModel):
    """The router's decision and why, shown to the client verbatim."""

    tier: Tier
    model: str = ""
    score: int = 0
    signals: dict[str, int] = Field(default_factory=dict)
    reason: str = ""
    # Kinds of attack in a part of the question that the router dropped, routing the rest (the
    # question every later stage reads is that rest): the answer opens with the refusal of that part.
    attack_dropped: list[str] = Field(default_factory=list)


class Usage(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
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


class Query(BaseModel):
    """The question as the gateway asked it: set once, read by every stage, never changed."""

    model_config = ConfigDict(extra="ignore")

    request_id: str
    gateway_id: str
    question: str
    session_id: str | None = None
    # Earlier turns given by the caller (e.g. an OpenAI-style message list). When set they are the
    # conversation; otherwise the retriever reads the session's turns from the sessions bucket.
    history: list[Turn] | None = None
    collection: Collection = "default"
    filters: dict[str, Any] = Field(default_factory=dict)
    selected_text: str | None = None
    trace_id: str = ""
    # Unset (a publisher that does not know the field): the question neither reads nor fills the cache.
    tenant: str | None = Field(
        None,
        description="whose answer cache the question may use: the caller's owner (a key's tenant, else the key "
        "alone, else admin or local); another tenant's cached answers are never read",
    )
    # True when absent, so a gateway that does not know the field still gets every delta it relays.
    stream: bool = Field(
        True,
        description="whether the caller streams the answer: token deltas are sent only when true "
        "(POST /v1/query sends false and gets the final answer alone)",
    )


class CacheScope(BaseModel):
    """Which answers a question may be served from: the same tenant, collection, index version and
    context (filters and selected text), nothing else.
    """  # noqa: D205 (the text is the model's published schema description)

    model_config = ConfigDict(extra="ignore")

    tenant: str = Field(description="the asking caller's owner (a tenant, else its key, else admin or local)")
    collection: str
    version: int = Field(description="the collection's index version when the question was searched")
    context: str = Field(description="digest of the question's filters and selected text")


class CacheKey(CacheScope):
    """Set by the retriever on a question it looked up and did not find: where the evaluator keeps
    the answer if no flag is raised. Travels with the question to the evaluator, no further.
    """  # noqa: D205 (the text is the model's published schema description)

    digest: str = Field(description="the key's last part: digest of the normalised question and the context")
    question: str
    vector: str = Field(description="the question's MiniLM vector, float32, base64")


class Retrieval(BaseModel):
    """What the retriever found for the question, or why it refuses."""

    rewritten_question: str | None = None  # the follow-up made standalone; None when it was one
    threshold: float = 0.0  # the collection's calibrated relevance threshold the passages were held to
    low_confidence: str | None = None  # why the passages only just passed, when they did
    passages: list[Passage] = Field(default_factory=list)
    refused: bool = False
    refusal_reason: str | None = None
    # Per passage ``n``: the cosine similarity to the (rewritten) question of each quotable unit, by
    # its ``rag_common.text.quotable.sentence_key``, from vectors stored at ingest; only passages whose
    # chunks have such vectors. The generator ranks extractive sentences with them, then drops them.
    sentence_scores: dict[int, dict[str, float]] = Field(default_factory=dict)
    # Set on a question the answer cache could serve and did not: where the evaluator keeps its
    # answer when no flag is raised (``rag_common.store.answer_cache``). Dropped from the final answer.
    cache: CacheKey | None = None


class Draft(BaseModel):
    """The answer before evaluation; ``cited`` are passage numbers (``n``) in citation order."""

    answer: str
    model: str
    cited: list[int] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    refused: bool = False
    refusal_reason: str | None = None
    # Canned text the answer opens with (the refusal of a question's dropped attack): it states
    # nothing from the documents, so it is not judged as a statement.
    preface: str = ""
    # Why the model's answer was withheld (an output check or the citation check failed): the
    # answer is then the extractive one, and the evaluator raises ``model_answer_rejected``.
    model_answer_rejected: str | None = None


class QueryRequested(Message):
    """A question for the first stage, as the gateway publishes it."""

    type: Literal["rag.query.requested.v2"] = "rag.query.requested.v2"
    query: Query


class StageMessage(Message):
    """What every stage after the router hands on: the question, the route, the stage timings."""

    query: Query
    route: Route
    # Why this exchange looks like prompt injection ("question: override", "output: secret"); stages
    # append, the evaluator raises ``injection_suspected`` from it.
    suspicions: list[str] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    selection_spans: list[tuple[int, int]] | None = Field(
        None,
        description="instruction-like character ranges of the question's selected_text, found by the router "
        "(the generator never shows them to a model); unset when not checked",
    )
    # Read once per question, by the router: no later stage opens the profiles bucket.
    profile: CollectionTexts | None = Field(
        None,
        description="the collection's effective profile (the collections file, overridden by the admin API) as "
        "the router read it for this question; unset from a router that does not send it (then the file's)",
    )


class QueryRouted(StageMessage):  # noqa: D101 (a docstring would change its published schema description)
    type: Literal["rag.query.routed.v2"] = "rag.query.routed.v2"


class QueryRetrieved(StageMessage):  # noqa: D101 (a docstring would change its published schema description)
    type: Literal["rag.query.retrieved.v2"] = "rag.query.retrieved.v2"
    retrieval: Retrieval


class Evaluation(BaseModel):
    """The evaluator's verdict on a drafted answer: every flag, why each raised one was raised."""

    # Keyed by ``Flag`` names, typed as strings on purpose: a gateway must still read the answer of
    # a newer evaluator that raises a flag it does not know (and pass that flag on to the client).
    flags: dict[str, bool]
    details: dict[str, Any] = Field(default_factory=dict)
    flagged: bool  # a failing flag is raised (``FAILING_FLAGS``: "refused" alone is not failing)

    def raised(self, flag: Flag) -> bool:
        """Whether ``flag`` is raised; a flag the evaluator did not report counts as not raised."""
        return self.flags.get(flag, False)


class DraftedStage(StageMessage):
    """What a stage message carries once an answer is drafted: the retrieval (empty when the router
    answered alone) and the draft.
    """  # noqa: D205 (the text is the model's published schema description)

    retrieval: Retrieval = Field(default_factory=Retrieval)
    draft: Draft

    @property
    def citations(self) -> list[Passage]:
        """The cited passages, each once, in the order the answer cites them."""
        by_n = {p.n: p for p in self.retrieval.passages}
        return [by_n[n] for n in self.draft.cited if n in by_n]


class QueryDrafted(DraftedStage):
    """A drafted answer; ``retrieval`` is empty when the router answered alone (greeting, refusal)."""

    type: Literal["rag.query.drafted.v2"] = "rag.query.drafted.v2"
    kept: Evaluation | None = Field(
        None,
        description="set on an answer served from the answer cache (by the retriever): the evaluation it was "
        "kept with, which the evaluator sends on as it is",
    )


class QueryAnswered(DraftedStage):
    """The final answer to the waiting gateway: the drafted message's parts and the ``Evaluation``.

    The HTTP body of ``POST /v1/query`` is made from it in one place, ``rag_common.wire.http_api.Answer``.
    """

    type: Literal["rag.answer.final.v2"] = "rag.answer.final.v2"
    evaluation: Evaluation
    cached: bool = Field(
        False, description="served from the answer cache: an earlier unflagged answer to the same question"
    )

    @field_serializer("query")
    def _query_without_history(self, query: Query, info: SerializationInfo) -> dict[str, Any]:
        """The conversation stays behind.

        The gateway that asked holds it, and it would make every answer of a long conversation
        travel back tens of kilobytes for nothing.
        """
        return query.model_dump(mode=info.mode, exclude={"history"})

    @field_serializer("retrieval")
    def _retrieval_without_cache_key(self, retrieval: Retrieval, info: SerializationInfo) -> dict[str, Any]:
        """The cache key (the question's vector among it) was for the evaluator alone."""
        return retrieval.model_dump(mode=info.mode, exclude={"cache"})

    @classmethod
    def of(cls, drafted: QueryDrafted, evaluation: Evaluation) -> QueryAnswered:
        """``drafted``'s parts as they are (the same objects, not copied field by field) plus ``evaluation``.

        ``cached`` when the draft came from the answer cache.
        """
        # The profile was for the stages: the gateway does not read it, nor does the answer cache keep it.
        parts = {name: getattr(drafted, name) for name in DraftedStage.model_fields if name not in ("type", "profile")}
        return cls(**parts, evaluation=evaluation, cached=drafted.kept is not None)


class AnswerDelta(Message):
    """One streamed piece of answer text; ``attempt`` tells deltas of a redelivered stage apart."""

    type: Literal["rag.answer.delta.v1"] = "rag.answer.delta.v1"
    request_id: str
    attempt: str
    seq: int
    text: str


class AnswerError(Message):
    """A query that cannot be answered; ``status`` is the HTTP status the gateway returns."""

    type: Literal["rag.answer.error.v1"] = "rag.answer.error.v1"
    request_id: str
    code: str
    message: str
    status: int = 500
