"""Asking questions: a JSON answer, or the answer streamed as server-sent events."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rag_common.transport.publishing import JSON
from rag_common.transport.telemetry import current_trace_id
from rag_common.wire import subjects
from rag_common.wire.http_api import Answer
from rag_common.wire.messages import AnswerDelta, AnswerError, Flag, Query, QueryAnswered, QueryRequested, Turn
from rag_common.wire.names import Collection, Filters
from rag_gateway.access import Authenticated, authenticate, require
from rag_gateway.answers import Event, Pending
from rag_gateway.auth import Right
from rag_gateway.deps import Gateway, GatewayDep, ResourcesDep
from rag_gateway.errors import ApiError, client_label, client_request_id, request_id
from rag_gateway.openapi import errors
from rag_gateway.resources import Resources
from rag_gateway.sessions import SessionCollectionMismatch, SessionStore, scoped_id, valid_session_id

router = APIRouter(prefix="/v1", tags=["query"], dependencies=[Depends(authenticate)])
log = logging.getLogger("rag.gateway")


class QueryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(..., max_length=4000, description="the question, in natural language")
    session_id: str | None = Field(None, max_length=128)
    collection: Collection = "default"
    filters: Filters = Field(
        default_factory=dict,
        description='payload filters, e.g. {"source": "faq.md"}: strings, integers, booleans or lists of them',
    )
    selected_text: str | None = Field(None, max_length=8000, description="text the user selected on a page")

    @field_validator("question")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must not be empty")
        return value.strip()

    @field_validator("session_id")
    @classmethod
    def _session_id(cls, value: str | None) -> str | None:
        if value is not None and not valid_session_id(value):
            raise ValueError("session_id must be 1-128 letters, digits, '-' or '_'")
        return value


async def readable_query(body: QueryIn, principal: Authenticated) -> QueryIn:
    """The question, once the caller is known to have the read right on its collection."""
    require(principal, body.collection, Right.READ)
    return body


ReadableQuery = Annotated[QueryIn, Depends(readable_query)]


async def conversation(sessions: SessionStore, body: QueryIn, owner: str) -> list[Turn] | None:
    """The earlier turns of ``owner``'s session, checked to belong to the collection asked (before
    queuing). Another owner's session of the same id is not seen: this starts a new one."""
    if body.session_id is None:
        return None
    try:
        return await sessions.history(scoped_id(owner, body.session_id), body.collection)
    except SessionCollectionMismatch as exc:
        raise ApiError(409, "session_collection_mismatch", str(exc)) from None


async def remember(sessions: SessionStore, body: QueryIn, rid: str, answered: QueryAnswered, owner: str) -> None:
    """Record an answered turn of a conversation; a blocked injection attempt is not carried on."""
    if body.session_id is None:
        return
    evaluation = answered.evaluation
    if evaluation.raised(Flag.INJECTION_SUSPECTED) and evaluation.raised(Flag.REFUSED):
        return
    turn = Turn(
        # The question as the stages read it: a dropped attack is not carried into the conversation.
        question=answered.query.question,
        answer=answered.draft.answer,
        rewritten_question=answered.retrieval.rewritten_question,
        sources=list(dict.fromkeys(c.source for c in answered.citations)),
    )
    try:
        await sessions.record(scoped_id(owner, body.session_id), body.collection, rid, turn)
    except Exception as exc:  # the answer is already on its way; memory is best effort
        log.warning("could not record a turn of session %s: %s", body.session_id, exc)


async def submit(
    gateway: Gateway,
    resources: Resources,
    body: QueryIn,
    rid: str,
    history: list[Turn] | None = None,
    label: str | None = None,
    *,
    stream: bool,
    owner: str,
) -> Pending:
    """Publish the question to the first stage; the answer will come back on our own subject.

    ``rid`` is always the server's own id: it names the answer subject and the message ids, so
    no client can make two questions share one. ``label`` (the client's id) only goes to the log.
    ``stream``: whether the caller relays token deltas (else the generator sends none).
    ``owner``: whose session ``body.session_id`` names (``Principal.owner``).
    """
    if history is None:
        history = await conversation(resources.sessions, body, owner)
    pending = gateway.hub.open(rid)
    message = QueryRequested(
        query=Query(
            request_id=rid,
            gateway_id=gateway.settings.gateway_id,
            question=body.question,
            session_id=body.session_id,
            history=history,
            collection=body.collection,
            filters=body.filters,
            selected_text=body.selected_text,
            trace_id=current_trace_id(),
            stream=stream,
            tenant=owner,
        )
    )
    try:
        await publish_question(gateway, message)
    except Exception as exc:
        gateway.hub.close(rid)
        raise ApiError(503, "unavailable", f"could not queue the question: {exc}") from exc
    pending.question = message
    log.info("question %s queued for collection %s (client_request_id=%s)", rid, body.collection, label)
    return pending


async def publish_question(gateway: Gateway, message: QueryRequested) -> None:
    """Queue a question for the first stage; returns once JetStream has stored it (its PubAck).

    The message id is the request id: JetStream drops a second publish of one question within the
    stream's duplicate window. The HTTP request's trace context goes in the headers."""
    headers = {"Nats-Msg-Id": f"{message.query.request_id}:requested", **JSON}
    await gateway.broker.publish(message, subjects.QUERY_REQUESTED, stream=subjects.QUERY_STREAM, headers=headers)


async def resubmit_unanswered(gateway: Gateway) -> int:
    """Queue again every question this gateway still waits for (after a NATS restart).

    ``RAG_QUERY`` is memory-stored: a restarted nats-server comes back without the questions it
    held, and their callers would get 504 at their deadline. Run once the stream is back (the
    broker's JetStream layout calls it); a question the stream still has is dropped by JetStream
    as a duplicate, and the answer hub passes on one final answer per question in any case.
    """
    questions = gateway.hub.unanswered()
    for message in questions:
        await publish_question(gateway, message)
    if questions:
        log.warning("re-submitted %d unanswered question(s) after NATS came back", len(questions))
    return len(questions)


async def next_event(gateway: Gateway, pending: Pending, deadline: float) -> Event:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise ApiError(504, "timeout", f"no answer within {gateway.settings.query_timeout_s:.0f}s")
    try:
        return await asyncio.wait_for(pending.queue.get(), timeout=remaining)
    except TimeoutError:
        raise ApiError(504, "timeout", f"no answer within {gateway.settings.query_timeout_s:.0f}s") from None


def answer_of(answered: QueryAnswered, started: float, gateway: Gateway, request: Request) -> Answer:
    """The HTTP answer to a final answer (made from its parts by ``Answer.of`` alone), with the
    client's label and the total time as the gateway saw it; the answer is counted in the metrics."""
    answer = Answer.of(answered)  # its timings_ms is a dict of its own: adding "total" changes no message
    label = client_request_id(request)
    if label and answer.__pydantic_extra__ is not None:
        answer.__pydantic_extra__["client_request_id"] = label
    answer.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 3)
    metrics, evaluation = gateway.metrics, answered.evaluation
    metrics.queries.labels("refused" if evaluation.raised(Flag.REFUSED) else "answered", answered.route.tier).inc()
    for flag, raised in evaluation.flags.items():
        if raised:
            metrics.flags.labels(flag).inc()
    for stage, ms in answered.timings_ms.items():
        metrics.stage_ms.labels(stage).observe(ms / 1000)
    return answer


def answer_body(answered: QueryAnswered, started: float, gateway: Gateway, request: Request) -> dict[str, Any]:
    """``answer_of`` as a plain dict (the stream's ``done`` event, the OpenAI-compatible ``rag``)."""
    return answer_of(answered, started, gateway, request).model_dump()


def raise_for(error: AnswerError) -> None:
    raise ApiError(error.status, error.code, error.message)


async def final_answer(gateway: Gateway, pending: Pending, rid: str) -> QueryAnswered:
    """Wait for the final answer of a non-streaming request (token deltas are skipped).

    An error event raises it as the HTTP error; 504 after the query timeout; either way the hub
    forgets the request.
    """
    deadline = time.monotonic() + gateway.settings.query_timeout_s
    try:
        while True:
            event = await next_event(gateway, pending, deadline)
            if isinstance(event, AnswerError):
                raise_for(event)
            if isinstance(event, QueryAnswered):
                return event
    finally:
        gateway.hub.close(rid)


@router.post("/query", response_model=Answer, responses=errors(404, 409, 422, 503, 504))
async def query(
    body: ReadableQuery, request: Request, gateway: GatewayDep, resources: ResourcesDep, principal: Authenticated
) -> Answer:
    """Answer a question with citations, route, flags, usage, timings and trace id."""
    started = time.perf_counter()
    rid = request_id(request)
    owner = principal.owner
    label = client_request_id(request)
    pending = await submit(gateway, resources, body, rid, label=label, stream=False, owner=owner)
    answer = await final_answer(gateway, pending, rid)
    await remember(resources.sessions, body, rid, answer, owner)
    # An Answer is not validated again (FastAPI keeps an instance of the response model as it is)
    # and is encoded once, straight to JSON bytes.
    return answer_of(answer, started, gateway, request)


def stream_error(status: int, code: str, message: str, rid: str, request: Request) -> dict[str, Any]:
    """A stream's ``error`` event: the HTTP status the same failure gets from ``POST /v1/query``
    (the stream itself is already 200), its code and message, and the request ids."""
    return {"status": status, "code": code, "message": message, "request_id": rid, **client_label(request)}


@router.post(
    "/query/stream",
    response_class=EventSourceResponse,
    responses={
        **errors(422),
        200: {
            "description": "`token` events (`{text}`), then one `done` (the Answer) or `error` "
            "(`{status, code, message, request_id}`)",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
)
async def query_stream(
    body: ReadableQuery, request: Request, gateway: GatewayDep, resources: ResourcesDep, principal: Authenticated
) -> AsyncIterator[ServerSentEvent]:
    """``token`` events as the generator produces text, then one ``done`` (the full answer) or ``error``."""
    started = time.perf_counter()
    rid = request_id(request)
    owner = principal.owner
    try:
        label = client_request_id(request)
        pending = await submit(gateway, resources, body, rid, label=label, stream=True, owner=owner)
    except ApiError as exc:
        yield ServerSentEvent(event="error", data=stream_error(exc.status, exc.code, exc.message, rid, request))
        return
    deadline = time.monotonic() + gateway.settings.query_timeout_s
    streamed = False
    try:
        while True:
            try:
                event = await next_event(gateway, pending, deadline)
            except ApiError as exc:
                yield ServerSentEvent(event="error", data=stream_error(exc.status, exc.code, exc.message, rid, request))
                return
            if isinstance(event, AnswerDelta):
                streamed = True
                yield ServerSentEvent(event="token", data={"text": event.text})
            elif isinstance(event, AnswerError):
                error = stream_error(event.status, event.code, event.message, rid, request)
                yield ServerSentEvent(event="error", data=error)
                return
            else:
                if event.cached and not streamed:  # a cached answer comes whole: its text as one token
                    yield ServerSentEvent(event="token", data={"text": event.draft.answer})
                await remember(resources.sessions, body, rid, event, owner)
                yield ServerSentEvent(event="done", data=answer_body(event, started, gateway, request))
                return
    finally:
        gateway.hub.close(rid)
