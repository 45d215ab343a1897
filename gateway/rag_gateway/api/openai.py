"""OpenAI-compatible chat API: any OpenAI client, chat front-end or agent framework can ask.

The model id is the collection name. The last user message is the question; earlier user/assistant
pairs are the conversation (``history``), which the retriever uses to make a follow-up standalone.
Citations, passages, flags and route travel in the extra ``rag`` field of the completion (and of the
final chunk when streaming).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from rag_common.store.documents import StatusStore
from rag_common.wire.http_api import Answer
from rag_common.wire.messages import AnswerDelta, AnswerError, QueryAnswered, Turn
from rag_gateway.access import Authenticated, authenticate
from rag_gateway.answers import Pending
from rag_gateway.api.query import QueryIn, answer_body, answer_of, final_answer, next_event, submit
from rag_gateway.auth import Principal
from rag_gateway.deps import Gateway, GatewayDep, ResourcesDep
from rag_gateway.errors import ApiError, request_id
from rag_gateway.openapi import errors
from rag_gateway.resources import Resources
from rag_gateway.sessions import ANSWER_CHARS

router = APIRouter(prefix="/v1", tags=["openai"], dependencies=[Depends(authenticate)])

OWNER = "rag-nats"


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["text"] = "text"
    text: str


# A conversation longer than this is not a chat but a payload: refused with a clear 400. Of a
# shorter one, only the last turns the sessions keep (RAG_GATEWAY_SESSION_MAX_TURNS) are used.
MAX_MESSAGES = 200


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(part.text for part in self.content)
        return self.content or ""


class ChatCompletionIn(BaseModel):
    """OpenAI's request body; sampling fields (temperature, max_tokens, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(..., description="the collection to answer from (see GET /v1/models)")
    messages: list[ChatMessage] = Field(
        ..., min_length=1, max_length=MAX_MESSAGES, description=f"at most {MAX_MESSAGES} messages"
    )
    stream: bool = False
    filters: dict[str, Any] = Field(default_factory=dict, description="extension: payload filters, as in /v1/query")
    selected_text: str | None = Field(None, max_length=8000, description="extension: text the user selected")


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = OWNER


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage
    rag: Answer = Field(description="the full answer of POST /v1/query: citations, passages, flags, route")


async def model_ids(status: StatusStore, principal: Principal) -> list[str]:
    """The collections this caller may read, as /v1/collections lists them."""
    return principal.visible_collections(await status.collection_names())


def conversation_of(messages: list[ChatMessage]) -> tuple[str, list[Turn]]:
    """The question (last user message) and the earlier user/assistant exchanges as turns.

    System and tool messages are not part of what the documents are asked; a user message with no
    assistant reply after it becomes a turn with an empty answer.
    """
    dialogue = [m for m in messages if m.role in ("user", "assistant")]
    if not dialogue or dialogue[-1].role != "user" or not dialogue[-1].text.strip():
        raise ApiError(422, "invalid_request", "the last message must be a non-empty user message", param="messages")
    turns: list[Turn] = []
    for message in dialogue[:-1]:
        if message.role == "user":
            turns.append(Turn(question=message.text))
        elif turns and not turns[-1].answer:
            turns[-1].answer = message.text
    return dialogue[-1].text, [t for t in turns if t.question.strip()]


async def check_model(status: StatusStore, principal: Principal, model: str) -> None:
    if model not in await model_ids(status, principal):
        message = f"the model {model!r} does not exist or you do not have access to it"
        raise ApiError(404, "model_not_found", message, param="model")


def usage_of(answered: QueryAnswered) -> CompletionUsage:
    usage = answered.draft.usage
    return CompletionUsage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
    )


@router.get("/models", response_model=ModelList, responses=errors(401, 429, 503, openai=True))
async def list_models(resources: ResourcesDep, principal: Authenticated) -> ModelList:
    """The collections this caller may read, as OpenAI models: the model id is the collection name."""
    return ModelList(data=[ModelCard(id=name) for name in await model_ids(resources.status, principal)])


@router.get("/models/{model}", response_model=ModelCard, responses=errors(401, 404, 429, 503, openai=True))
async def get_model(model: str, resources: ResourcesDep, principal: Authenticated) -> ModelCard:
    await check_model(resources.status, principal, model)
    return ModelCard(id=model)


async def _prepared(
    body: ChatCompletionIn, gateway: Gateway, resources: Resources, principal: Principal
) -> tuple[QueryIn, list[Turn]]:
    await check_model(resources.status, principal, body.model)
    question, turns = conversation_of(body.messages)
    turns = [t.model_copy(update={"answer": t.answer[:ANSWER_CHARS]}) for t in turns]
    turns = turns[-gateway.settings.session_max_turns :]
    try:
        query = QueryIn(
            question=question, collection=body.model, filters=body.filters, selected_text=body.selected_text
        )
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc), param="messages") from None
    return query, turns


@router.post(
    "/chat/completions",
    response_model=ChatCompletion,
    responses={
        **errors(400, 401, 404, 429, 503, 504, openai=True),
        200: {
            "description": "a chat.completion; with `stream: true`, `chat.completion.chunk` events, then `[DONE]`",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
)
async def chat_completions(
    body: ChatCompletionIn, request: Request, gateway: GatewayDep, resources: ResourcesDep, principal: Authenticated
) -> ChatCompletion | StreamingResponse:
    """Answer the last user message from the collection named by ``model`` (``stream`` for SSE chunks)."""
    started = time.perf_counter()
    rid = request_id(request)
    query, turns = await _prepared(body, gateway, resources, principal)
    pending = await submit(gateway, resources, query, rid, history=turns, stream=body.stream, owner=principal.owner)
    if body.stream:
        stream = chunks(gateway, request, pending, rid, body.model, started)
        return StreamingResponse(stream, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    answered = await final_answer(gateway, pending, rid)
    return ChatCompletion(
        id=f"chatcmpl-{rid}",
        created=int(time.time()),
        model=body.model,
        choices=[Choice(message=AssistantMessage(content=answered.draft.answer))],
        usage=usage_of(answered),
        rag=answer_of(answered, started, gateway, request),
    )


def sse(data: Any) -> str:
    """One server-sent event with only a ``data:`` line, as OpenAI streams them."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"data: {text}\n\n"


def chunk(rid: str, model: str, created: int, delta: dict[str, str], **extra: Any) -> str:
    finish = extra.pop("finish_reason", None)
    data = {
        "id": f"chatcmpl-{rid}",
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        **extra,
    }
    return sse(data)


def stream_error(status: int, code: str, message: str, rid: str) -> str:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return sse({"error": {"message": message, "type": kind, "param": None, "code": code, "request_id": rid}})


async def chunks(
    gateway: Gateway, request: Request, pending: Pending, rid: str, model: str, started: float
) -> AsyncIterator[str]:
    """OpenAI's stream: a role chunk, content chunks, a ``stop`` chunk with ``rag``, then ``[DONE]``."""
    created = int(time.time())
    deadline = time.monotonic() + gateway.settings.query_timeout_s
    streamed = False
    try:
        yield chunk(rid, model, created, {"role": "assistant", "content": ""})
        while True:
            try:
                event = await next_event(gateway, pending, deadline)
            except ApiError as exc:
                yield stream_error(exc.status, exc.code, exc.message, rid)
                break
            if isinstance(event, AnswerDelta):
                if event.text:
                    streamed = True
                    yield chunk(rid, model, created, {"content": event.text})
            elif isinstance(event, AnswerError):
                yield stream_error(event.status, event.code, event.message, rid)
                break
            else:
                if not streamed and event.draft.answer:  # canned and refused answers come whole
                    yield chunk(rid, model, created, {"content": event.draft.answer})
                rag = answer_body(event, started, gateway, request)
                usage = usage_of(event).model_dump()
                yield chunk(rid, model, created, {}, finish_reason="stop", usage=usage, rag=rag)
                break
        yield sse("[DONE]")
    finally:
        gateway.hub.close(rid)
