"""Dataset folders: ``corpus/`` plus ``questions.jsonl``, parsed into typed questions."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rag_common.wire.formats import SUPPORTED_EXTENSIONS
from rag_devrun.corpus import corpus_files
from rag_scorecard.errors import UsageError
from rag_scorecard.metrics import Expectations, GoldSource


class _GoldIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    source: str = Field(min_length=1)
    section: str | None = None
    page: int | None = Field(None, ge=1)


class _TurnIn(BaseModel):
    """One question and what it expects; unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    question: str = Field(min_length=1)
    expected_sources: list[_GoldIn] = Field(default_factory=list)
    expected_keywords: list[str] = Field(default_factory=list)
    disallowed_keywords: list[str] = Field(default_factory=list)
    expected_flags: dict[str, bool] = Field(default_factory=dict)
    expected_tier: Literal["fast", "strong", "greeting"] | None = None
    out_of_scope: bool = False
    expected_rewrite: list[str] = Field(default_factory=list)
    reference_answer: str | None = None
    # In the collection's domain but not answered by its documents ("Who is the CEO?"): must be
    # refused (or flagged low_confidence), counted apart from off-topic and injection items.
    unanswerable: bool = False
    # A set's own label (nats-docs: fact, howto, why, two_part, unanswerable, off_topic,
    # conversation): "unanswerable" and "off_topic" items must be refused, as the flags above say.
    category: str | None = None
    # The planted instruction the question targets (samples/planted), counted in the report's ``injection``.
    planted_form: str | None = None

    @model_validator(mode="after")
    def _from_category(self) -> _TurnIn:
        if self.category == "unanswerable":
            self.unanswerable = True
        elif self.category == "off_topic":
            self.out_of_scope = True
        return self


class _ItemIn(BaseModel):
    """A line of questions.jsonl: one question (the turn's fields inline) or a ``conversation``."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    question: str | None = None
    conversation: list[_TurnIn] | None = None
    # nats-docs writes a conversation as ``turns`` and repeats its first turn at the top level.
    turns: list[_TurnIn] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> _ItemIn:
        if self.turns is not None and self.conversation is None:
            self.conversation, self.question = self.turns, None
        if (self.question is None) == (self.conversation is None):
            raise ValueError("give exactly one of 'question' or 'conversation'")
        if self.conversation is not None and not self.conversation:
            raise ValueError("'conversation' must list at least one turn")
        return self


@dataclass(frozen=True, slots=True)
class Question:
    """One question to ask; a conversation turn knows its conversation and position."""

    id: str
    question: str
    expect: Expectations
    conversation_id: str | None = None
    turn: int | None = None  # 1-based


@dataclass(frozen=True, slots=True)
class Item:
    """A line of questions.jsonl: a single question or the ordered turns of a conversation."""

    id: str
    turns: tuple[Question, ...]

    @property
    def is_conversation(self) -> bool:
        return self.turns[0].conversation_id is not None


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    root: Path
    corpus: Path
    items: tuple[Item, ...]

    @property
    def questions(self) -> list[Question]:
        return [turn for item in self.items for turn in item.turns]


def _expectations(turn: _TurnIn) -> Expectations:
    return Expectations(
        expected_sources=tuple(GoldSource(g.source, g.section, g.page) for g in turn.expected_sources),
        expected_keywords=tuple(turn.expected_keywords),
        disallowed_keywords=tuple(turn.disallowed_keywords),
        expected_flags=dict(turn.expected_flags),
        expected_tier=turn.expected_tier,
        out_of_scope=turn.out_of_scope,
        expected_rewrite=tuple(turn.expected_rewrite),
        reference_answer=turn.reference_answer or None,
        unanswerable=turn.unanswerable,
        category=turn.category,
        planted_form=turn.planted_form,
    )


def _describe(error: ValidationError) -> str:
    parts = []
    for e in error.errors():
        where = ".".join(str(p) for p in e["loc"])
        parts.append(f"{where}: {e['msg']}" if where else e["msg"])
    return "; ".join(parts)


def parse_questions(lines: Iterable[str], where: str = "questions.jsonl") -> tuple[Item, ...]:
    """Parse questions.jsonl text; an error names the file, the line number and the field."""
    items: list[Item] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where} line {number}: not valid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(raw, dict):
            raise UsageError(f"{where} line {number}: expected a JSON object, got {type(raw).__name__}")
        try:
            parsed = _ItemIn.model_validate(raw)
            single = _TurnIn.model_validate(raw) if parsed.conversation is None else None
        except ValidationError as exc:
            raise UsageError(f"{where} line {number}: {_describe(exc)}") from None
        if parsed.id in seen:
            raise UsageError(f"{where} line {number}: id {parsed.id!r} already used on line {seen[parsed.id]}")
        seen[parsed.id] = number
        if single is not None:
            turns: tuple[Question, ...] = (Question(parsed.id, single.question, _expectations(single)),)
        else:
            assert parsed.conversation is not None
            turns = tuple(
                Question(f"{parsed.id}.{i}", t.question, _expectations(t), conversation_id=parsed.id, turn=i)
                for i, t in enumerate(parsed.conversation, start=1)
            )
        items.append(Item(parsed.id, turns))
    if not items:
        raise UsageError(f"{where}: no questions")
    return tuple(items)


SHARED_SETS = Path("../shared/eval")  # the shared evaluation sets beside the repository


def load_dataset(folder: Path) -> Dataset:
    """Read a dataset folder (``corpus/`` + ``questions.jsonl``), failing with a message that says what is wrong.

    A bare name that is no folder here ("nats-docs") is looked up among the shared sets.
    """
    if not folder.is_dir() and len(folder.parts) == 1 and (SHARED_SETS / folder).is_dir():
        folder = SHARED_SETS / folder
    if not folder.is_dir():
        raise UsageError(f"dataset folder {folder} does not exist (expected a folder with corpus/ and questions.jsonl)")
    corpus, questions = folder / "corpus", folder / "questions.jsonl"
    if not corpus.is_dir():
        raise UsageError(f"{folder}: no corpus/ folder (the documents to ingest go there)")
    if not questions.is_file():
        raise UsageError(f"{folder}: no questions.jsonl (one JSON object per line, see docs/EVALUATION.md)")
    if not corpus_files(corpus):
        raise UsageError(f"{corpus}: no supported documents ({', '.join(SUPPORTED_EXTENSIONS)})")
    with questions.open(encoding="utf-8") as lines:
        items = parse_questions(lines, str(questions))
    return Dataset(name=slug(folder.resolve().name), root=folder, corpus=corpus, items=items)


def slug(name: str) -> str:
    """A lowercase slug usable in a collection name and a report file name."""
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")
    return cleaned or "dataset"


def collection_for(dataset_name: str) -> str:
    """The default collection: ``eval-<name>``, so evaluation data never mixes with ``default``."""
    return f"eval-{slug(dataset_name)}"[:63].rstrip("-_")
