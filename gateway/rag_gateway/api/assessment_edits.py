"""A teacher's edits to a finished paper: remove one question, or have it written again.

A question is named by its number in the paper (from 1, as the page and every export number it).
Removing it renumbers the rest and takes its marks off the total. Writing it again sends the paper
back through the pipeline as the evaluator's regeneration pass does (``AssessmentRejected``): the
retriever gives the question passages of a section of its unit that no other question drew on, the
generator writes a question of the same type, Bloom level and marks, the evaluator checks it
against the rest of the paper and puts it in the question's place (or keeps the question, saying
why). Both are the owner's only (the same 404 as a missing id), and only on a finished paper (409
while it is being made or rewritten). Each edit is a compare-and-set on the job's stored state, so
two edits at once cannot both land: the later one gets a 409.
"""

from __future__ import annotations

import logging
import time
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response
from nats.js.errors import KeyWrongLastSequenceError

from rag_common.store.assessments import AssessmentStore
from rag_common.transport.telemetry import current_trace_id
from rag_common.wire import subjects
from rag_common.wire.messages.assessment import (
    Assessment,
    AssessmentItem,
    AssessmentRejected,
    AssessmentState,
    Progress,
    Question,
    QuestionSpec,
)
from rag_gateway.access import authenticate
from rag_gateway.api.assessments import AssessmentAccepted, OwnedAssessment
from rag_gateway.deps import GatewayDep, ResourcesDep
from rag_gateway.errors import ApiError, request_id
from rag_gateway.openapi import errors

router = APIRouter(prefix="/v1/assessments", tags=["assessments"], dependencies=[Depends(authenticate)])
log = logging.getLogger("rag.gateway")

# The pipeline's passes are numbered 1 (first) and 2 (regeneration); a rewrite is pass 3 and on,
# one more per edit, which keeps each pass's message ids apart from every earlier one's.
FIRST_REWRITE_PASS = 3

QuestionNumber = Annotated[int, Path(description="the question's number in the paper, from 1")]


def _marks(value: float) -> str:
    return f"{value:g} mark{'' if value == 1 else 's'}"


def position_of(state: AssessmentState, number: int) -> int:
    """The list position of question ``number`` of a finished paper; 409 while it is not finished,
    422 for a number the paper does not have."""
    if state.status != "done":
        raise ApiError(409, "assessment_not_done", f"assessment {state.id} is {state.status}: edit it once it is done")
    count = len(state.questions)
    if not 1 <= number <= count:
        have = f"questions 1 to {count}" if count else "no questions"
        raise ApiError(422, "question_not_in_paper", f"assessment {state.id} has {have}; there is no question {number}")
    return number - 1


async def _store_if_unchanged(store: AssessmentStore, read: AssessmentState, state: AssessmentState) -> None:
    """Write ``state`` unless the stored job changed since ``read`` was read (409 then)."""
    entry = await store.kv.get(state.id)
    if entry.value is None or AssessmentState.model_validate_json(entry.value).updated_at != read.updated_at:
        raise _changed(state.id)
    state.updated_at = time.time()
    try:
        await store.kv.update(state.id, state.model_dump_json().encode(), last=entry.revision)
    except KeyWrongLastSequenceError:
        raise _changed(state.id) from None


def _changed(assessment_id: str) -> ApiError:
    return ApiError(409, "assessment_changed", f"assessment {assessment_id} changed meanwhile: read it and try again")


def recount(state: AssessmentState) -> None:
    """The paper's totals after an edit: valid questions, marks, questions per unit."""
    state.counts.valid = len(state.questions)
    state.marks_met = sum(q.marks for q in state.questions)
    units: dict[str, int] = {}
    for q in state.questions:
        units[q.unit] = units.get(q.unit, 0) + 1
    state.units_met = units


@router.delete("/{assessment_id}/questions/{number}", response_model=AssessmentState, responses=errors(404, 409, 422))
async def remove_question(state: OwnedAssessment, number: QuestionNumber, resources: ResourcesDep) -> AssessmentState:
    """Take question ``number`` out of the paper: the rest are renumbered, the marks total drops,
    and every export follows."""
    position = position_of(state, number)
    edited = state.model_copy(deep=True)
    removed = edited.questions.pop(position)
    recount(edited)
    edited.edits.append(f"Removed question {number} ({removed.kind}, {_marks(removed.marks)}): {removed.stem}")
    await _store_if_unchanged(resources.assessments, state, edited)
    log.info("assessment %s: question %d removed", state.id, number)
    return edited


def topic_of(question: Question) -> str:
    """The section a question was drawn from, as the retriever names topics ('source > heading')."""
    if not question.citations:
        return ""
    cited = question.citations[0]
    return f"{cited.source} > {cited.section}" if cited.section else cited.source


def rewrite_items(questions: list[Question], target: Question) -> list[AssessmentItem]:
    """The paper as the regeneration pass carries it: each question kept, the target to write again
    (its spec: the same unit, type, Bloom level, difficulty and marks). The target's ``rejected``
    holds the question it replaces and every other question of the paper: the generator draws on
    none of their sentences again, so the new question neither repeats the old nor copies another."""
    items = []
    for q in questions:
        spec = QuestionSpec(
            index=q.index,
            kind=q.kind,
            unit=q.unit,
            topic=topic_of(q),
            bloom=q.bloom,
            difficulty=q.difficulty,
            marks=q.marks,
        )
        if q.index == target.index:
            others = [other for other in questions if other.index != target.index]
            items.append(AssessmentItem(spec=spec, rejected=[q, *others]))
        else:
            items.append(AssessmentItem(spec=spec, question=q))
    return items


@router.post(
    "/{assessment_id}/questions/{number}/rewrite",
    status_code=202,
    response_model=AssessmentAccepted,
    responses=errors(404, 409, 422, 503),
)
async def rewrite_question(
    state: OwnedAssessment,
    number: QuestionNumber,
    request: Request,
    response: Response,
    gateway: GatewayDep,
    resources: ResourcesDep,
) -> AssessmentAccepted:
    """Have question ``number`` written again by the pipeline, from other material of its unit; the
    paper is being made again until the new question is in (``GET /{id}`` or ``/events``)."""
    position = position_of(state, number)
    rid = request_id(request)
    target = state.questions[position]
    pass_number = FIRST_REWRITE_PASS + len(state.edits)
    # Seeded by the paper's seed and the edit's number: each rewrite draws differently, reproducibly.
    blueprint = state.blueprint.model_copy(update={"seed": state.blueprint.seed + pass_number})
    job = Assessment(
        id=state.id, request_id=rid, blueprint=blueprint, trace_id=current_trace_id(), rewrite=target.index
    )
    edited = state.model_copy(deep=True)
    edited.status = "queued"
    edited.progress = Progress(stage="queued", done=len(state.questions), total=len(state.questions) + 1)
    await _store_if_unchanged(resources.assessments, state, edited)
    message = AssessmentRejected(
        assessment=job, items=rewrite_items(state.questions, target), foils=[], round=pass_number
    )
    try:
        await gateway.broker.publish(
            message,
            subjects.ASSESSMENT_REJECTED,
            stream=subjects.ASSESSMENT_STREAM,
            headers={"Nats-Msg-Id": f"{state.id}:rewrite:{pass_number}"},
        )
    except Exception as exc:
        state.updated_at = time.time()
        await resources.assessments.kv.put(state.id, state.model_dump_json().encode())  # the paper as it was
        raise ApiError(503, "unavailable", f"could not queue the rewrite: {exc}") from exc
    log.info("assessment %s: question %d queued to be written again", state.id, number)
    response.headers["Location"] = f"/v1/assessments/{state.id}"
    return AssessmentAccepted(id=state.id, status=edited.status, request_id=rid)
