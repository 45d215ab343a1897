"""The gateway's HTTP bodies as typed models: its OpenAPI schema and the Python client share them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, AliasGenerator, AliasPath, BaseModel, ConfigDict, Field

from rag_common.wire.messages import (
    AuditEvent,
    DocumentState,
    DocumentStatus,
    Flag,
    Passage,
    QueryAnswered,
    Route,
    Turn,
    Usage,
)
from rag_common.wire.withheld import withhold_spans

# Where each field of the answer body is in the final message's parts (``QueryAnswered``); the
# fields not listed (citations, route, timings_ms) have the same name there.
ANSWER_PARTS: dict[str, tuple[str, str]] = {
    "request_id": ("query", "request_id"),
    "answer": ("draft", "answer"),
    "model": ("draft", "model"),
    "passages": ("retrieval", "passages"),
    "flags": ("evaluation", "flags"),
    "flag_details": ("evaluation", "details"),
    "flagged": ("evaluation", "flagged"),
    "usage": ("draft", "usage"),
    "trace_id": ("query", "trace_id"),
    "collection": ("query", "collection"),
    "session_id": ("query", "session_id"),
    "rewritten_question": ("retrieval", "rewritten_question"),
}


def _flat_or_part(name: str) -> str | AliasChoices:
    """A field is read by its own name (a flat body, as clients receive it), else from its part."""
    return AliasChoices(name, AliasPath(*ANSWER_PARTS[name])) if name in ANSWER_PARTS else name


# The gateway makes the answer body from the final message in one place, ``Answer.of``, which reads
# each field where ``ANSWER_PARTS`` says (no copy by hand). A flat body, as every client receives it
# (``POST /v1/query``, the stream's ``done`` event, the ``rag`` field of the OpenAI-compatible API),
# validates by the field names as usual. The docstring is the OpenAPI description: for clients.
class Answer(BaseModel):
    """The body of ``POST /v1/query`` and the ``done`` event of ``POST /v1/query/stream``."""

    model_config = ConfigDict(
        extra="allow",  # a newer gateway may add fields; an older client keeps them
        alias_generator=AliasGenerator(validation_alias=_flat_or_part),
    )

    request_id: str
    answer: str = Field(description="the answer text; citations appear as [n]")
    model: str = Field(description='the model that wrote it: a LiteLLM model, "extractive" or "none"')
    citations: list[Passage] = Field(
        description="the passages the answer cites, by their n, then each passage holding planted instructions "
        "that raised injection_suspected (withheld: true, the planted text replaced by a notice)"
    )
    passages: list[Passage] = Field(description="every passage the generator was given (planted text withheld)")
    route: Route
    flags: dict[str, bool] = Field(description="refused, citation_invalid, conflicting_sources, ...")
    flag_details: dict[str, Any] = Field(default_factory=dict, description="why a flag was raised")
    flagged: bool = Field(description="true when a failing flag is raised")
    usage: Usage
    timings_ms: dict[str, float] = Field(description="per stage, and total as the gateway saw it")
    trace_id: str = ""
    collection: str = "default"
    session_id: str | None = None
    rewritten_question: str | None = Field(None, description="a follow-up made standalone from the conversation")
    cached: bool = Field(
        False,
        description="served from the answer cache: an earlier unflagged answer to the same question (or one meaning "
        "the same) in this collection, for this tenant, with the collection's documents unchanged since",
    )

    @classmethod
    def of(cls, answered: QueryAnswered) -> Answer:
        """The body of a final answer.

        Its parts read by attribute (``citations`` is the message's own property), passages and
        route as they are; then the planted text ingest marked in any passage is withheld, and, when
        the answer is flagged for it, the planted passages it does not cite join its sources, so the
        injection notice points at something the reader can see.
        """
        answer = cls.model_validate(answered, from_attributes=True)
        cited = {p.n for p in answer.citations}
        # Only for an answer the planted text flagged: a refusal cites nothing.
        flagged = answer.flags.get(Flag.INJECTION_SUSPECTED, False) and not answer.flags.get(Flag.REFUSED, False)
        planted = [p for p in answer.passages if p.injection_spans and p.n not in cited] if flagged else []
        answer.citations = [withheld(p) for p in [*answer.citations, *planted]]
        answer.passages = [withheld(p) for p in answer.passages]
        return answer


def withheld(passage: Passage) -> Passage:
    """The passage as a reader sees it: each planted range replaced by a notice, marked ``withheld``."""
    if not passage.injection_spans:
        return passage
    text, notices = withhold_spans(passage.text, passage.injection_spans)
    return passage.model_copy(update={"text": text, "injection_spans": notices, "withheld": True})


class ErrorDetail(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    code: str = Field(description="machine-readable, e.g. document_not_found, invalid_request, timeout")
    message: str
    request_id: str


class ErrorBody(BaseModel):
    """Every error of the API (except the OpenAI-compatible paths, which use OpenAI's shape)."""

    error: ErrorDetail


class OpenAIErrorDetail(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    message: str
    type: str = Field(description="invalid_request_error, authentication_error, rate_limit_error, server_error...")
    param: str | None = None
    code: str | None = None
    request_id: str | None = None


class OpenAIErrorBody(BaseModel):
    """Errors of ``/v1/chat/completions`` and ``/v1/models``, in OpenAI's shape."""

    error: OpenAIErrorDetail


class DocumentAccepted(BaseModel):
    """``202`` of an upload or a delete: the work is queued; poll the document for its status."""

    document_id: str
    status: DocumentState
    source: str | None = None
    collection: str | None = None
    request_id: str
    client_request_id: str | None = Field(None, description="the client's X-Request-ID, when it sent one")


class DocumentList(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    documents: list[DocumentStatus]
    next: str | None = Field(None, description="pass as `after` for the following page; null on the last page")


class CollectionInfo(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    name: str
    documents: int
    rights: list[str] = Field(default_factory=list, description="what the caller's key may do here")


class CollectionList(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    collections: list[CollectionInfo]


class SessionView(BaseModel):
    """``GET /v1/sessions/{id}``: the turns remembered for a conversation, oldest first."""

    session_id: str
    collection: str
    turns: list[Turn]
    updated_at: float = Field(description="Unix time of the last turn")


KeyRight = Literal["read", "write"]


class KeyInfo(BaseModel):
    """An API key as listed: everything but its secret."""

    id: str = Field(description="the key's public id: what it is listed and revoked by")
    name: str
    collections: dict[str, list[KeyRight]] = Field(description='rights per collection ("*" = every collection)')
    rate_limit_per_min: int | None = Field(None, description="its own limit; null: the gateway's default")
    tenant: str | None = Field(None, description="keys of one tenant share conversations; null: the key alone")
    created_at: float


class KeyCreated(KeyInfo):
    """``POST /v1/keys``: the new key, the only time its secret is shown."""

    key: str = Field(description="the bearer token; store it now, it cannot be shown again")


class KeyList(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    keys: list[KeyInfo]


class Liveness(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    """``/readyz``: 200 with ``ready`` or ``degraded`` when this gateway can serve, 503 with
    ``not_ready`` when it cannot; ``missing`` names its failed checks, ``degraded`` the services
    behind it that do not answer (reported, not required).
    """  # noqa: D205 (the text is the model's published schema description)

    status: Literal["ready", "degraded", "not_ready"]
    checks: dict[str, str] = Field(description="this gateway's own checks: nats, buckets, streams")
    services: dict[str, str] = Field(description="each service behind it, and the vector store")
    missing: list[str]
    degraded: list[str]


class AuditRecord(AuditEvent):
    """One audit event as ``GET /v1/audit`` lists it, with its place in the stream."""

    seq: int = Field(description="the event's stream sequence: pass the last one as `after` for the next page")


class AuditPage(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    events: list[AuditRecord] = Field(description="oldest first")
    next: int | None = Field(description="the sequence to pass as `after` for the next page (null: the log is empty)")
