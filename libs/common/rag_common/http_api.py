"""The gateway's HTTP bodies as typed models: its OpenAPI schema and the Python client share them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rag_common.messages import DocumentState, DocumentStatus, Passage, Route, Usage


class Answer(BaseModel):
    """The body of ``POST /v1/query`` and the ``done`` event of ``POST /v1/query/stream``."""

    model_config = ConfigDict(extra="allow")  # a newer gateway may add fields; an older client keeps them

    request_id: str
    answer: str = Field(description="the answer text; citations appear as [n]")
    model: str = Field(description='the model that wrote it: a LiteLLM model, "extractive" or "none"')
    citations: list[Passage] = Field(description="the passages the answer cites, by their n")
    passages: list[Passage] = Field(description="every passage the generator was given")
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


class ErrorDetail(BaseModel):
    code: str = Field(description="machine-readable, e.g. document_not_found, invalid_request, timeout")
    message: str
    request_id: str


class ErrorBody(BaseModel):
    """Every error of the API (except the OpenAI-compatible paths, which use OpenAI's shape)."""

    error: ErrorDetail


class OpenAIErrorDetail(BaseModel):
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


class DocumentList(BaseModel):
    documents: list[DocumentStatus]


class CollectionInfo(BaseModel):
    name: str
    documents: int
    rights: list[str] = Field(default_factory=list, description="what the caller's key may do here")


class CollectionList(BaseModel):
    collections: list[CollectionInfo]
