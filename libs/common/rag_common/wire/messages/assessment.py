"""Messages and stored state of an assessment (an exam made from a collection's material).

The gateway publishes the blueprint (``AssessmentRequested``); the retriever picks passages for each
question spec (``AssessmentRetrieved``); the generator writes a question per spec
(``AssessmentDrafted``); the evaluator checks each one, sends the failed ones back once
(``AssessmentRejected``: the retriever finds them passages of another section, the generator writes
them again from those in an ``AssessmentRetrieved`` of the regeneration pass) and stores the result.
Every stage writes the job's ``AssessmentState`` into the key-value bucket ``rag-assessments``,
which the gateway reads.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rag_common.wire.messages.base import Message
from rag_common.wire.messages.query import Passage
from rag_common.wire.names import Collection

QuestionKind = Literal["mcq", "short", "long"]
Difficulty = Literal["easy", "medium", "hard"]
BloomLevel = Literal["remember", "understand", "apply", "analyze", "evaluate", "create"]
AssessmentStatus = Literal["queued", "retrieving", "generating", "validating", "done", "failed"]

# The verbs each Bloom level is asked with (revised taxonomy, Anderson & Krathwohl 2001).
BLOOM_VERBS: dict[BloomLevel, tuple[str, ...]] = {
    "remember": ("define", "identify", "list", "name", "recall", "recognise", "recognize", "state"),
    "understand": ("explain", "describe", "interpret", "summarise", "summarize", "classify", "discuss"),
    "apply": ("apply", "use", "determine", "calculate", "demonstrate", "solve", "show"),
    "analyze": ("analyse", "analyze", "compare", "contrast", "differentiate", "examine", "distinguish"),
    "evaluate": ("evaluate", "assess", "justify", "judge", "critique", "recommend", "argue"),
    "create": ("design", "propose", "plan", "formulate", "devise", "compose", "construct"),
}

# The forms a question of each level takes (the generator's ``rule``): a label says what the form is.
BLOOM_FORMS: dict[BloomLevel, tuple[str, ...]] = {
    "remember": ("recall", "cloze", "define"),
    "understand": ("why", "how", "meaning", "explain"),
    "apply": ("scenario",),
    "analyze": ("compare",),
    "evaluate": ("better-option",),
    "create": ("plan",),
}

QUESTION_KINDS: tuple[QuestionKind, ...] = ("mcq", "short", "long")
BLOOM_LEVELS: tuple[BloomLevel, ...] = ("remember", "understand", "apply", "analyze", "evaluate", "create")


def _default_levels() -> list[BloomLevel]:
    return ["remember", "understand"]


class Blueprint(BaseModel):
    """What the teacher asked for."""

    model_config = ConfigDict(extra="ignore")

    collection: Collection = "default"
    units: list[str] = Field(
        default_factory=list,
        description="documents (their source name) or heading paths ('Billing > Refunds'); empty: the whole collection",
    )
    counts: dict[QuestionKind, int] = Field(default_factory=dict, description="questions wanted per type")
    difficulty: Difficulty = "medium"
    bloom_levels: list[BloomLevel] = Field(default_factory=_default_levels)
    total_marks: int | None = Field(
        None, description="marks of the whole paper; None: 1 per MCQ, 3 per short, 6 per long"
    )
    seed: int = 0


class QuestionSpec(BaseModel):
    """One question to write: its type, unit, Bloom level, difficulty and marks."""

    model_config = ConfigDict(extra="ignore")

    index: int
    kind: QuestionKind
    unit: str = ""  # the unit it is drawn from ("" when the blueprint named none)
    topic: str = ""  # the section the retriever searched for (source and heading path)
    bloom: BloomLevel = "remember"
    difficulty: Difficulty = "medium"
    marks: float = 1.0


class Citation(BaseModel):
    """Where a question comes from: the passage's source, section (or slide) and page."""

    model_config = ConfigDict(extra="ignore")

    source: str
    section: str = ""
    page: int | None = None
    chunk_index: int = 0
    quote: str = Field("", description="the sentence of the passage the key or model answer rests on")


class Validation(BaseModel):
    """The evaluator's verdict on one question: each check by name, why a failed one failed."""

    model_config = ConfigDict(extra="ignore")

    valid: bool = False
    checks: dict[str, bool] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)
    regenerated: bool = False


class MarkingPoint(BaseModel):
    """One point of a marking scheme: what earns the marks, and the passage sentence it rests on."""

    model_config = ConfigDict(extra="ignore")

    point: str
    marks: float
    citation: Citation


class Question(BaseModel):
    """A written question with its key (MCQ: ``options[answer_index]``) or model answer."""

    model_config = ConfigDict(extra="ignore")

    index: int
    kind: QuestionKind
    stem: str
    options: list[str] = Field(default_factory=list)
    answer_index: int | None = None
    answer: str = Field(..., description="MCQ: the key; short/long: the model answer, quoted from the passage")
    bloom: BloomLevel
    difficulty: Difficulty
    marks: float
    unit: str = ""
    source: str = Field("", description="where it comes from, to show beside the stem (never inside it)")
    citations: list[Citation] = Field(default_factory=list)
    scheme: list[MarkingPoint] = Field(
        default_factory=list, description="short/long: the points a marker looks for, each cited; marks add up"
    )
    rule: str = Field(
        "", description="its form: recall, cloze, why, how, meaning, scenario, define, compare, better-option, ..."
    )
    model: str = "rules"
    validation: Validation = Field(default_factory=Validation)


class UnitMaterial(BaseModel):
    """How much a unit holds for the paper asked.

    The sentences a question may be drawn from, and how many of them the paper rests on: papers of
    two seeds share about ``used / sentences`` of them.
    """

    model_config = ConfigDict(extra="ignore")

    unit: str = Field("", description="as the blueprint names it; empty: the whole collection")
    sentences: int = Field(
        0, description="distinct sentences of its content sections that read as statements of 7-45 words"
    )
    used: int = Field(0, description="of them, the sentences the paper's questions rest on")
    enough: bool = Field(
        True, description="room for a paper of another seed sharing at most 40 % of them: sentences >= 2.5 x used"
    )


class AssessmentItem(BaseModel):
    """One spec on its way through the stages: its passages, then its question."""

    model_config = ConfigDict(extra="ignore")

    spec: QuestionSpec
    passages: list[Passage] = Field(default_factory=list)
    question: Question | None = None
    rejected: list[Question] = Field(default_factory=list, description="earlier attempts the evaluator failed")
    seconds: float = 0.0  # time the generator spent writing it


class Assessment(BaseModel):
    """The job as every stage reads it: set by the gateway, never changed."""

    model_config = ConfigDict(extra="ignore")

    id: str
    request_id: str
    blueprint: Blueprint
    trace_id: str = ""
    rewrite: int | None = Field(
        None, description="the index of the one question the teacher asked to write again; None: the whole paper"
    )


class AssessmentRequested(Message):  # noqa: D101 (a docstring would change its published schema description)
    type: Literal["rag.assessment.requested.v1"] = "rag.assessment.requested.v1"
    assessment: Assessment


class AssessmentRetrieved(Message):
    """Specs with their passages, and foils: texts from elsewhere in the collection for distractors.

    The regeneration pass carries the questions the evaluator accepted (``question`` set) and the ones to write
    again (``question`` empty), with passages of another section where their unit has one.
    """

    type: Literal["rag.assessment.retrieved.v1"] = "rag.assessment.retrieved.v1"
    assessment: Assessment
    items: list[AssessmentItem]
    foils: list[Passage] = Field(default_factory=list)
    round: int = 1
    material: list[UnitMaterial] = Field(default_factory=list, description="per unit, the sentences to draw from")


class AssessmentDrafted(Message):  # noqa: D101 (a docstring would change its published schema description)
    type: Literal["rag.assessment.drafted.v1"] = "rag.assessment.drafted.v1"
    assessment: Assessment
    items: list[AssessmentItem]
    foils: list[Passage] = Field(default_factory=list)
    round: int = 1
    material: list[UnitMaterial] = Field(default_factory=list)


class AssessmentRejected(Message):
    """The paper after the first check, back to the retriever: the accepted questions (``question``
    set) and the ones to write again (``question`` empty, earlier attempts in ``rejected``), which
    get passages of another section of their unit so the regeneration does not ask the same material.
    """  # noqa: D205 (the text is the model's published schema description)

    type: Literal["rag.assessment.rejected.v1"] = "rag.assessment.rejected.v1"
    assessment: Assessment
    items: list[AssessmentItem]
    foils: list[Passage] = Field(default_factory=list)
    round: int = 2


class Progress(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    stage: str = "queued"
    done: int = 0
    total: int = 0


class QuestionCounts(BaseModel):  # noqa: D101 (a docstring would change its published schema description)
    requested: int = 0
    generated: int = 0
    valid: int = 0
    rejected: int = 0
    regenerated: int = 0
    dropped: int = 0


class Shortfall(BaseModel):
    """Questions of one type the paper lacks: how many, their marks, and why each is missing."""

    model_config = ConfigDict(extra="ignore")

    kind: QuestionKind
    requested: int
    written: int = Field(..., description="valid questions of this type in the paper")
    missing: int
    marks_missing: float
    reasons: list[str] = Field(
        default_factory=list, description="why, one line per missing question, numbered as in the blueprint"
    )


class LevelGap(BaseModel):
    """A Bloom level asked for that the paper has no question of, and why."""

    model_config = ConfigDict(extra="ignore")

    level: BloomLevel
    reason: str


class AssessmentState(BaseModel):
    """What the key-value bucket keeps per assessment, and ``GET /v1/assessments/{id}`` returns."""

    model_config = ConfigDict(extra="ignore")

    id: str
    owner: str = Field(
        "",
        description="who may read it: the tenant of the key that created it, else that key (``tenant-…``, ``key-…``)",
    )
    status: AssessmentStatus = "queued"
    request_id: str = ""
    trace_id: str = ""
    blueprint: Blueprint
    progress: Progress = Field(default_factory=Progress)
    counts: QuestionCounts = Field(default_factory=QuestionCounts)
    questions: list[Question] = Field(default_factory=list)
    dropped: list[Question] = Field(
        default_factory=list, description="questions that failed validation twice, with why (not in the paper)"
    )
    units_met: dict[str, int] = Field(default_factory=dict, description="valid questions per unit")
    marks_requested: float = Field(0.0, description="marks of every question asked for")
    marks_met: float = Field(0.0, description="marks of the questions in the paper")
    shortfall: list[Shortfall] = Field(
        default_factory=list, description="per question type the paper lacks: how many, their marks, why"
    )
    bloom_unsupported: list[LevelGap] = Field(
        default_factory=list, description="Bloom levels asked for that the material could not support, with why"
    )
    material: list[UnitMaterial] = Field(
        default_factory=list,
        description="per unit, the sentences to draw from and those the paper uses: room for another seed's paper",
    )
    summary: str = Field("", description="the paper against the request, in words: met, or what is missing and why")
    edits: list[str] = Field(
        default_factory=list, description="the teacher's changes to the paper, in words, oldest first"
    )
    error: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    seconds_per_question: float = 0.0
