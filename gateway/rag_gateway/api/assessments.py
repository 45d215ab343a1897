"""Assessments: a blueprint in, an id back at once; progress, the paper and its exports by id."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rag_common.transport.telemetry import current_trace_id
from rag_common.wire import subjects
from rag_common.wire.messages import new_id
from rag_common.wire.messages.assessment import (
    Assessment,
    AssessmentRequested,
    AssessmentState,
    BloomLevel,
    Blueprint,
    Difficulty,
    QuestionKind,
)
from rag_common.wire.names import Collection
from rag_gateway.access import Authenticated, authenticate, refused_as_not_found, require
from rag_gateway.auth import Right
from rag_gateway.deps import GatewayDep, ResourcesDep
from rag_gateway.errors import ApiError, request_id
from rag_gateway.exports import to_gift, to_markdown
from rag_gateway.moodle import to_moodle_xml
from rag_gateway.openapi import errors

router = APIRouter(prefix="/v1/assessments", tags=["assessments"], dependencies=[Depends(authenticate)])
log = logging.getLogger("rag.gateway")

MAX_QUESTIONS = 100
MAX_UNITS = 50
FINISHED = ("done", "failed")


def _default_levels() -> list[BloomLevel]:
    return ["remember", "understand"]


class AssessmentIn(BaseModel):
    """A blueprint: which material, how many questions of each type, how hard, which Bloom levels."""

    model_config = ConfigDict(extra="forbid")

    collection: Collection = "default"
    units: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(
        default_factory=list,
        max_length=MAX_UNITS,
        description="documents (source name) or heading paths ('Billing > Refunds'); empty: the whole collection",
    )
    counts: dict[QuestionKind, Annotated[int, Field(ge=0, le=MAX_QUESTIONS)]] = Field(
        ..., description='questions per type, e.g. {"mcq": 10, "short": 5, "long": 2}'
    )
    difficulty: Difficulty = "medium"
    bloom_levels: list[BloomLevel] = Field(default_factory=_default_levels, min_length=1)
    total_marks: int | None = Field(None, ge=1, le=10_000, description="marks of the paper; default 1/3/6 per type")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="the same seed and material give the same paper")

    @field_validator("counts")
    @classmethod
    def _some_questions(cls, counts: dict[QuestionKind, int]) -> dict[QuestionKind, int]:
        total = sum(counts.values())
        if total == 0:
            raise ValueError("ask for at least one question (counts of mcq, short or long)")
        if total > MAX_QUESTIONS:
            raise ValueError(f"at most {MAX_QUESTIONS} questions per assessment, got {total}")
        return counts


class AssessmentAccepted(BaseModel):
    id: str
    status: str
    request_id: str


@router.post("", status_code=202, response_model=AssessmentAccepted, responses=errors(404, 422, 503))
async def create_assessment(
    body: AssessmentIn,
    request: Request,
    response: Response,
    gateway: GatewayDep,
    resources: ResourcesDep,
    principal: Authenticated,
) -> AssessmentAccepted:
    """Queue an assessment; its id comes back at once, its progress and paper from ``GET /{id}``."""
    require(principal, body.collection, Right.READ)
    rid = request_id(request)
    store = resources.assessments
    if body.collection not in await resources.status.collection_names():
        raise ApiError(404, "collection_not_found", f"collection {body.collection!r} has no documents")
    total = sum(body.counts.values())
    if body.total_marks is not None and body.total_marks < total:
        raise ApiError(
            422, "invalid_request", f"total_marks {body.total_marks} is less than one per question ({total})"
        )
    blueprint = Blueprint.model_validate(body.model_dump())
    job = Assessment(id=new_id(), request_id=rid, blueprint=blueprint, trace_id=current_trace_id())
    now = time.time()
    state = AssessmentState(
        id=job.id,
        owner=principal.owner,
        request_id=rid,
        trace_id=job.trace_id,
        blueprint=blueprint,
        created_at=now,
        updated_at=now,
    )
    state.counts.requested = total
    state.progress.total = total
    try:
        await store.put(state)
        await gateway.broker.publish(
            AssessmentRequested(assessment=job),
            subjects.ASSESSMENT_REQUESTED,
            stream=subjects.ASSESSMENT_STREAM,
            headers={"Nats-Msg-Id": f"{job.id}:requested"},
        )
    except Exception as exc:
        raise ApiError(503, "unavailable", f"could not queue the assessment: {exc}") from exc
    gateway.assessment_metrics.assessments.labels("started").inc()
    log.info("assessment %s queued for collection %s (%d questions)", job.id, body.collection, total)
    response.headers["Location"] = f"/v1/assessments/{job.id}"
    return AssessmentAccepted(id=job.id, status=state.status, request_id=rid)


ASSESSMENT_ID = re.compile(r"[0-9a-f]{32}")


def not_found(assessment_id: str) -> ApiError:
    """The one 404 of an assessment id: missing, expired, or not the caller's (ids are not secrets)."""
    shown = assessment_id if len(assessment_id) <= 80 else assessment_id[:80] + "..."
    return ApiError(404, "assessment_not_found", f"no assessment {shown!r}")


async def owned_assessment(
    assessment_id: str, request: Request, resources: ResourcesDep, principal: Authenticated
) -> AssessmentState:
    """The caller's own assessment: made by a key of its tenant (or by its key, without a tenant),
    in a collection it may still read. Anything else is the 404 of a missing id, decided before a
    route answers (the event stream's 200 included)."""
    if not ASSESSMENT_ID.fullmatch(assessment_id):
        raise not_found(assessment_id)  # also never a bucket key the store would refuse
    state = await resources.assessments.get(assessment_id)
    if state is None:
        raise not_found(assessment_id)
    collection = state.blueprint.collection
    if state.owner != principal.owner or not principal.can(collection, Right.READ):
        await refused_as_not_found(resources.audit, request, principal, assessment_id, collection)
        raise not_found(assessment_id)
    return state


OwnedAssessment = Annotated[AssessmentState, Depends(owned_assessment)]


@router.get("/{assessment_id}", response_model=AssessmentState, responses=errors(404))
async def get_assessment(state: OwnedAssessment) -> AssessmentState:
    """Status, progress and, once done, every question with its key, citations and validation."""
    return state


@router.get(
    "/{assessment_id}/events",
    response_class=EventSourceResponse,
    responses={
        **errors(404),
        200: {"description": "`progress` events (the state without questions), then `done` (the state) or `error`"},
    },
)
async def assessment_events(
    state: OwnedAssessment, gateway: GatewayDep, resources: ResourcesDep
) -> AsyncIterator[ServerSentEvent]:
    """Progress as the stages report it, then the finished paper (``done``) or the failure (``error``)."""
    assessment_id = state.id
    deadline = time.monotonic() + gateway.settings.assessment_timeout_s
    watcher = await resources.assessments.kv.watch(assessment_id)
    try:
        while True:
            yield _event(state)
            if state.status in FINISHED:
                return
            state = await _next_state(watcher, state, deadline)
    except TimeoutError:
        yield ServerSentEvent(
            event="error", data={"code": "timeout", "message": "no progress in time", "id": assessment_id}
        )
    finally:
        await watcher.stop()


async def _next_state(watcher: Any, current: AssessmentState, deadline: float) -> AssessmentState:
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            entry = await watcher.updates(timeout=remaining)
        except Exception as exc:  # nats' own TimeoutError is not the builtin one
            if "timeout" in type(exc).__name__.lower():
                raise TimeoutError from None
            raise
        if entry is None or entry.value is None:
            continue
        state = AssessmentState.model_validate_json(entry.value)
        if state.updated_at != current.updated_at:
            return state


def _event(state: AssessmentState) -> ServerSentEvent:
    if state.status == "done":
        return ServerSentEvent(event="done", data=state.model_dump(mode="json"))
    if state.status == "failed":
        return ServerSentEvent(
            event="error",
            data={"code": "assessment_failed", "message": state.error, "id": state.id, "request_id": state.request_id},
        )
    return ServerSentEvent(event="progress", data=state.model_dump(mode="json", exclude={"questions"}))


ExportFormat = Literal["json", "markdown", "gift", "moodle"]
_MEDIA = {
    "json": ("application/json", "json"),
    "markdown": ("text/markdown", "md"),
    "gift": ("text/plain", "gift"),
    "moodle": ("application/xml", "xml"),
}


@router.get(
    "/{assessment_id}/export",
    responses={
        **errors(404, 409),
        200: {
            "model": AssessmentState,
            "description": "the paper as JSON (the AssessmentState), Markdown (paper and answer key), Moodle GIFT, "
            "or Moodle XML (with each question's marks)",
            "content": {
                "text/markdown": {"schema": {"type": "string"}},
                "text/plain": {"schema": {"type": "string"}},
                "application/xml": {"schema": {"type": "string"}},
            },
        },
    },
)
async def export_assessment(
    state: OwnedAssessment,
    format: Annotated[ExportFormat, Query(description="json, markdown, gift or moodle (Moodle XML)")] = "json",
) -> Response:
    """Download a finished assessment."""
    assessment_id = state.id
    if state.status != "done":
        raise ApiError(409, "assessment_not_done", f"assessment {assessment_id} is {state.status}, not done")
    media, extension = _MEDIA[format]
    if format == "json":
        body = state.model_dump_json(indent=2)
    elif format == "markdown":
        body = to_markdown(state)
    elif format == "moodle":
        body = to_moodle_xml(state)
    else:
        body = to_gift(state)
    headers = {"Content-Disposition": f'attachment; filename="assessment-{assessment_id[:8]}.{extension}"'}
    return Response(body, media_type=f"{media}; charset=utf-8", headers=headers)
