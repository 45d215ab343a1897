"""Offline evaluation (L2): run a golden set through the whole system, as a user would.

``make eval DATASET=<dir>`` (``python -m rag_evaluator.harness --dataset <dir>``) takes a folder with
``corpus/`` and ``questions.jsonl``, uploads the corpus through ``POST /v1/documents`` into a
collection of its own, asks every question through ``POST /v1/query`` and scores the answers with
the pure formulas of :mod:`rag_evaluator.scoring`. It never talks to NATS or Qdrant: what it measures
is exactly what an HTTP client gets. Results go to ``reports/eval-<dataset>.json`` and ``.md``;
``--fail-under metric=value`` turns the run into a gate (exit 1). See docs/EVALUATION.md.

It uses the system on http://127.0.0.1:8000 (``make run``) when one answers there, a deployment
given with ``--url``, or else starts the whole system in this process for the run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from tqdm import tqdm

from rag_common.names import COLLECTION_RULE, valid_collection
from rag_devrun.corpus import LoadResult, corpus_files, load_corpus
from rag_evaluator.scoring import (
    AnswerScores,
    AnswerSummary,
    Expectations,
    GoldSource,
    MatchRule,
    Observed,
    Percentiles,
    RetrievalScores,
    RetrievalSummary,
    RetrievedPassage,
    percentiles,
    relevant,
    score_answer,
    score_retrieval,
    stage_percentiles,
    summarize_answers,
    summarize_retrieval,
)

DEFAULT_URL = "http://127.0.0.1:8000"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

# Metrics a --fail-under threshold may name: all "higher is better" rates. Latency, the flagged
# rate and violation counts are not gates of this kind (lower is better), so they are not listed.
GATEABLE_METRICS = (
    "retrieval.hit_at_1",
    "retrieval.hit_at_5",
    "retrieval.recall_at_3",
    "retrieval.recall_at_5",
    "retrieval.precision_at_3",
    "retrieval.f1_at_3",
    "retrieval.mrr_at_3",
    "retrieval.mrr_at_10",
    "retrieval.page_hit_at_5_pm1",
    "answers.refusal_accuracy",
    "answers.citation_validity",
    "answers.keyword_recall",
    "answers.flag_accuracy",
    "answers.tier_accuracy",
    "answers.injection_accuracy",
    "answers.rewrite_accuracy",
)


class UsageError(Exception):
    """Bad arguments or a bad dataset folder: the run cannot start (exit 2)."""


class RunError(Exception):
    """The run started but could not finish (system not ready, ingest failed): exit 1."""


# --- dataset -----------------------------------------------------------------------------------


class _GoldIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    source: str = Field(min_length=1)
    section: str | None = None
    page: int | None = Field(None, ge=1)


class _TurnIn(BaseModel):
    """One question and what it expects; unknown fields (e.g. ``reference_answer``) are ignored."""

    model_config = ConfigDict(extra="ignore")

    question: str = Field(min_length=1)
    expected_sources: list[_GoldIn] = Field(default_factory=list)
    expected_keywords: list[str] = Field(default_factory=list)
    disallowed_keywords: list[str] = Field(default_factory=list)
    expected_flags: dict[str, bool] = Field(default_factory=dict)
    expected_tier: Literal["fast", "strong", "greeting"] | None = None
    out_of_scope: bool = False
    expected_rewrite: list[str] = Field(default_factory=list)


class _ItemIn(BaseModel):
    """A line of questions.jsonl: one question (the turn's fields inline) or a ``conversation``."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    question: str | None = None
    conversation: list[_TurnIn] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> _ItemIn:
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


def load_dataset(folder: Path) -> Dataset:
    """Read a dataset folder (``corpus/`` + ``questions.jsonl``), failing with a message that says what is wrong."""
    if not folder.is_dir():
        raise UsageError(f"dataset folder {folder} does not exist (expected a folder with corpus/ and questions.jsonl)")
    corpus, questions = folder / "corpus", folder / "questions.jsonl"
    if not corpus.is_dir():
        raise UsageError(f"{folder}: no corpus/ folder (the documents to ingest go there)")
    if not questions.is_file():
        raise UsageError(f"{folder}: no questions.jsonl (one JSON object per line, see docs/EVALUATION.md)")
    if not corpus_files(corpus):
        raise UsageError(f"{corpus}: no supported documents (.md, .markdown, .txt, .pdf)")
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


# --- thresholds --------------------------------------------------------------------------------


def parse_thresholds(specs: Sequence[str]) -> dict[str, float]:
    """Parse ``metric=value`` pairs, rejecting unknown metrics with the list of valid ones."""
    thresholds: dict[str, float] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        name = name.strip()
        if not sep:
            raise UsageError(f"--fail-under {spec!r}: expected metric=value, e.g. retrieval.hit_at_5=0.8")
        if name not in GATEABLE_METRICS:
            raise UsageError(f"--fail-under: unknown metric {name!r}; valid metrics: {', '.join(GATEABLE_METRICS)}")
        try:
            thresholds[name] = float(value)
        except ValueError:
            raise UsageError(f"--fail-under {spec!r}: {value!r} is not a number") from None
    return thresholds


def metric_value(report: Mapping[str, Any], name: str) -> Any:
    """Look up a dotted metric name (``retrieval.hit_at_5``) in a report's JSON."""
    value: Any = report
    for part in name.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def check_thresholds(report: Mapping[str, Any], thresholds: Mapping[str, float]) -> list[str]:
    """One message per metric below its threshold; a metric the set could not measure fails too."""
    failures = []
    for name, minimum in thresholds.items():
        value = metric_value(report, name)
        if value is None:
            failures.append(f"{name} was not measured (no question in this set checks it); threshold {minimum}")
        elif value < minimum:
            failures.append(f"{name} = {value:.4f} is below {minimum}")
    return failures


# --- asking ------------------------------------------------------------------------------------


class QuestionError(BaseModel):
    """A question whose HTTP call failed; it is left out of every metric and fails the run."""

    id: str
    question: str
    status: int | None  # None: no HTTP response (timeout, connection error)
    message: str


@dataclass(slots=True)
class Outcome:
    """What came back for one question: the answer body or an error, and the client-side latency."""

    question: Question
    body: dict[str, Any] | None
    latency_ms: float
    error: QuestionError | None = None


RETRY_STATUSES = {429, 503}
MAX_RETRIES = 2
MAX_RETRY_WAIT_S = 10.0


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", {})
        return f"{error.get('code', 'error')}: {error.get('message', response.text[:200])}"
    except (ValueError, AttributeError):
        return response.text[:200] or response.reason_phrase


def _retry_after(response: httpx.Response, attempt: int) -> float:
    try:
        wait = float(response.headers.get("retry-after", ""))
    except ValueError:
        wait = 0.5 * 2**attempt
    return min(max(wait, 0.0), MAX_RETRY_WAIT_S)


async def ask(
    client: httpx.AsyncClient,
    question: Question,
    collection: str,
    session_id: str | None,
    timeout_s: float,
) -> Outcome:
    """Ask one question; a 429/503 is retried twice (bounded wait), any other failure is recorded."""
    payload: dict[str, Any] = {"question": question.question, "collection": collection}
    if session_id:
        payload["session_id"] = session_id
    for attempt in range(MAX_RETRIES + 1):
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s):  # a hard bound; httpx's own timeout is per read
                response = await client.post("/v1/query", json=payload, timeout=timeout_s)
        except (httpx.TimeoutException, TimeoutError):
            error = QuestionError(
                id=question.id, question=question.question, status=None, message=f"no response within {timeout_s}s"
            )
            return Outcome(question, None, (time.perf_counter() - started) * 1000, error)
        except httpx.HTTPError as exc:
            message = f"{type(exc).__name__}: {exc}"
            error = QuestionError(id=question.id, question=question.question, status=None, message=message)
            return Outcome(question, None, (time.perf_counter() - started) * 1000, error)
        latency_ms = (time.perf_counter() - started) * 1000
        if response.status_code == 200:
            try:
                return Outcome(question, dict(response.json()), latency_ms)
            except (ValueError, TypeError):
                message = f"the 200 response is not a JSON object: {response.text[:200]!r}"
                error = QuestionError(id=question.id, question=question.question, status=200, message=message)
                return Outcome(question, None, latency_ms, error)
        if response.status_code in RETRY_STATUSES and attempt < MAX_RETRIES:
            await asyncio.sleep(_retry_after(response, attempt))
            continue
        break
    error = QuestionError(
        id=question.id, question=question.question, status=response.status_code, message=_error_message(response)
    )
    return Outcome(question, None, latency_ms, error)


async def ask_all(
    client: httpx.AsyncClient,
    items: Sequence[Item],
    collection: str,
    *,
    concurrency: int,
    timeout_s: float,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Ask every question with at most ``concurrency`` in flight; conversation turns go in order.

    Each conversation gets one fresh ``session_id`` so a follow-up ("And how much does it cost?")
    is rewritten against its own earlier turns, never against another run's.
    """
    limit = asyncio.Semaphore(concurrency)
    run_id = uuid.uuid4().hex[:8]

    async def run_item(item: Item) -> list[Outcome]:
        session = f"eval-{run_id}-{item.id}"[:128] if item.is_conversation else None
        outcomes = []
        for turn in item.turns:
            async with limit:
                outcome = await ask(client, turn, collection, session, timeout_s)
            if on_done:
                on_done(outcome)
            outcomes.append(outcome)
        return outcomes

    per_item = await asyncio.gather(*(run_item(item) for item in items))
    return [outcome for outcomes in per_item for outcome in outcomes]


# --- scoring the answers -----------------------------------------------------------------------


def observed(body: Mapping[str, Any]) -> Observed:
    """The answer JSON of ``POST /v1/query`` reduced to what the metrics read."""
    flags = {str(k): bool(v) for k, v in (body.get("flags") or {}).items()}
    passages = tuple(
        RetrievedPassage(
            n=int(p.get("n", i)), source=str(p.get("source", "")), section=p.get("section") or "", page=p.get("page")
        )
        for i, p in enumerate(body.get("passages") or [], start=1)
    )
    return Observed(
        answer=str(body.get("answer", "")),
        refused=flags.get("refused", False),
        flagged=bool(body.get("flagged", False)),
        flags=flags,
        tier=(body.get("route") or {}).get("tier"),
        passages=passages,
        rewritten_question=body.get("rewritten_question"),
    )


class PassageDetail(BaseModel):
    n: int
    source: str
    section: str
    page: int | None
    score: float | None
    relevant: bool | None  # matches a gold entry (None: the question has no gold sources)
    text: str  # the first 160 characters, enough to see what was retrieved


class ItemDetail(BaseModel):
    """Per-question detail, for finding out why a metric is what it is."""

    id: str
    question: str
    conversation_id: str | None
    turn: int | None
    answer: str | None
    refused: bool | None
    flagged: bool | None
    flags: dict[str, bool]
    tier: str | None
    route: dict[str, Any]  # the router's decision as returned: tier, score, signals, reason
    expected_sources: list[dict[str, Any]]
    passages: list[PassageDetail]
    retrieval: RetrievalScores | None
    answers: AnswerScores | None
    latency_ms: float
    timings_ms: dict[str, float]
    error: str | None
    rewritten_question: str | None = None  # the standalone form of a follow-up, as the system searched


class LatencySummary(BaseModel):
    """Client-measured end-to-end latency, and each stage's own time from ``timings_ms``."""

    p50: float | None
    p95: float | None
    count: int
    stages: dict[str, Percentiles]


class IngestSummary(BaseModel):
    """What uploading the corpus did; a second run over the same files reports them all ``unchanged``."""

    documents: int  # files uploaded
    indexed: int
    unchanged: int
    failed: int
    failed_documents: dict[str, str]  # path -> error
    chunks: int
    seconds: float
    gold_sources_missing: list[str]  # gold source paths no document in the collection has


class EvalReport(BaseModel):
    """``reports/eval-<dataset>.json``: field names are stable (documented in docs/EVALUATION.md)."""

    dataset: str
    dataset_path: str
    collection: str
    url: str
    started_at: str
    seconds: float
    match_basename: bool
    items_in_file: int
    questions: int
    retrieval: RetrievalSummary
    answers: AnswerSummary
    latency_ms: LatencySummary
    ingest: IngestSummary
    errors: list[QuestionError]
    items: list[ItemDetail]


def _detail(outcome: Outcome, basename_only: bool) -> tuple[ItemDetail, RetrievalScores | None, AnswerScores | None]:
    q, body = outcome.question, outcome.body
    golds = q.expect.expected_sources
    gold_json = [_gold_json(g) for g in golds]
    base = {
        "id": q.id,
        "question": q.question,
        "conversation_id": q.conversation_id,
        "turn": q.turn,
        "expected_sources": gold_json,
        "latency_ms": round(outcome.latency_ms, 1),
    }
    if body is None:
        error = outcome.error.message if outcome.error else "no answer"
        detail = ItemDetail(
            **base,
            answer=None,
            refused=None,
            flagged=None,
            flags={},
            tier=None,
            route={},
            passages=[],
            retrieval=None,
            answers=None,
            timings_ms={},
            error=error,
        )
        return detail, None, None
    seen = observed(body)
    retrieval = score_retrieval(seen.passages, golds, basename_only=basename_only) if golds else None
    answers = score_answer(q.expect, seen)
    rule = MatchRule(basename_only=basename_only)
    passages = [
        PassageDetail(
            n=p.n,
            source=p.source,
            section=p.section,
            page=p.page,
            score=raw.get("score"),
            relevant=relevant(p, golds, rule) if golds else None,
            text=str(raw.get("text", ""))[:160],
        )
        for p, raw in zip(seen.passages, body.get("passages") or [], strict=False)
    ]
    detail = ItemDetail(
        **base,
        answer=seen.answer,
        rewritten_question=seen.rewritten_question,
        refused=seen.refused,
        flagged=seen.flagged,
        flags=dict(seen.flags),
        tier=seen.tier,
        route={k: v for k, v in (body.get("route") or {}).items() if k in ("tier", "score", "signals", "reason")},
        passages=passages,
        retrieval=retrieval,
        answers=answers,
        timings_ms={k: float(v) for k, v in (body.get("timings_ms") or {}).items()},
        error=None,
    )
    return detail, retrieval, answers


def _gold_json(gold: GoldSource) -> dict[str, Any]:
    entry: dict[str, Any] = {"source": gold.source}
    if gold.section is not None:
        entry["section"] = gold.section
    if gold.page is not None:
        entry["page"] = gold.page
    return entry


def _rounded(value: Any, digits: int = 4) -> Any:
    """Round every float in a JSON-like value: reports are read by people and diffed between runs."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v, digits) for v in value]
    return value


def build_report(
    dataset: Dataset,
    *,
    collection: str,
    url: str,
    outcomes: Sequence[Outcome],
    ingest: IngestSummary,
    started_at: datetime,
    seconds: float,
    basename_only: bool = False,
) -> EvalReport:
    """Score every outcome and assemble the report; errored questions only appear under ``errors``."""
    details, retrieval_scores, answer_scores = [], [], []
    for outcome in outcomes:
        detail, retrieval, answers = _detail(outcome, basename_only)
        details.append(detail)
        if retrieval is not None:
            retrieval_scores.append(retrieval)
        if answers is not None:
            answer_scores.append(answers)
    answered = [o for o in outcomes if o.body is not None]
    has_page_gold = any(g.page is not None for q in dataset.questions for g in q.expect.expected_sources)
    end_to_end = percentiles([o.latency_ms for o in answered])
    latency = LatencySummary(
        p50=end_to_end.p50,
        p95=end_to_end.p95,
        count=end_to_end.count,
        stages=stage_percentiles([(o.body or {}).get("timings_ms") or {} for o in answered]),
    )
    return EvalReport(
        dataset=dataset.name,
        dataset_path=str(dataset.root),
        collection=collection,
        url=url,
        started_at=started_at.isoformat(timespec="seconds"),
        seconds=seconds,
        match_basename=basename_only,
        items_in_file=len(dataset.items),
        questions=len(outcomes),
        retrieval=summarize_retrieval(retrieval_scores, has_page_gold=has_page_gold),
        answers=summarize_answers(answer_scores),
        latency_ms=latency,
        ingest=ingest,
        errors=[o.error for o in outcomes if o.error is not None],
        items=details,
    )


def report_json(report: EvalReport) -> dict[str, Any]:
    data: dict[str, Any] = _rounded(report.model_dump(mode="json"))
    return data


# --- Markdown summary --------------------------------------------------------------------------

RETRIEVAL_METRICS = tuple(f.name for f in fields(RetrievalSummary) if f.name != "questions")
ANSWER_METRICS = tuple(f.name for f in fields(AnswerSummary) if f.name != "questions")


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def _gold_text(gold: Mapping[str, Any]) -> str:
    where = f" § {gold['section']}" if gold.get("section") else f" p.{gold['page']}" if gold.get("page") else ""
    return f"{gold['source']}{where}"


def _cell(text: str, limit: int = 80) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_markdown(data: Mapping[str, Any]) -> str:
    """A short human summary of the JSON report: metric tables, then what missed and what failed."""
    r, a, lat, ing = data["retrieval"], data["answers"], data["latency_ms"], data["ingest"]
    lines = [
        f"# Evaluation: {data['dataset']}",
        "",
        f"{data['questions']} questions ({data['items_in_file']} items) against `{data['url']}`, collection "
        f"`{data['collection']}`, {data['started_at']}, {data['seconds']:.1f} s."
        + (" Sources matched by file name only (`--match-basename`)." if data["match_basename"] else ""),
        "",
        f"## Retrieval ({r['questions']} questions with gold sources; ranks over the passages returned)",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    for name in RETRIEVAL_METRICS:
        lines.append(f"| {name} | {_fmt(r[name])} |")
    lines += ["", f"## Answers ({a['questions']} answered)", "", "| metric | value |", "|---|---|"]
    for name in ANSWER_METRICS:
        lines.append(f"| {name} | {_fmt(a[name])} |")
    lines += [
        "",
        "## Latency (ms)",
        "",
        "| stage | p50 | p95 | n |",
        "|---|---|---|---|",
        f"| end to end (client) | {_ms(lat['p50'])} | {_ms(lat['p95'])} | {lat['count']} |",
    ]
    for stage, values in lat["stages"].items():
        lines.append(f"| {stage} | {_ms(values['p50'])} | {_ms(values['p95'])} | {values['count']} |")
    lines += [
        "",
        "## Ingest",
        "",
        f"{ing['documents']} documents: {ing['indexed']} indexed, {ing['unchanged']} unchanged, {ing['failed']} "
        f"failed; {ing['chunks']} chunks; {ing['seconds']:.1f} s.",
    ]
    if ing["gold_sources_missing"]:
        missing = ", ".join(f"`{s}`" for s in ing["gold_sources_missing"][:10])
        more = len(ing["gold_sources_missing"]) - 10
        lines.append(f"Gold sources with no document of that name in the collection: {missing}")
        if more > 0:
            lines[-1] += f" and {more} more"
    misses = [i for i in data["items"] if i["retrieval"] and i["retrieval"]["hit_at_5"] == 0]
    if misses:
        lines += ["", f"## Retrieval misses ({len(misses)}: no gold passage in the top 5)", ""]
        lines += ["| id | question | expected | top passages |", "|---|---|---|---|"]
        for item in misses:
            expected = "; ".join(_gold_text(g) for g in item["expected_sources"])
            got = "; ".join(_gold_text(p) for p in item["passages"][:3]) or "(none)"
            lines.append(f"| {item['id']} | {_cell(item['question'])} | {_cell(expected)} | {_cell(got, 120)} |")
    wrong = [i for i in data["items"] if i["answers"] and not i["answers"]["refusal_correct"]]
    if wrong:
        lines += ["", f"## Wrong refusal decisions ({len(wrong)})", "", "| id | question | refused |", "|---|---|---|"]
        lines += [f"| {i['id']} | {_cell(i['question'])} | {i['refused']} |" for i in wrong]
    if data["errors"]:
        lines += ["", f"## Errors ({len(data['errors'])})", "", "| id | status | message |", "|---|---|---|"]
        lines += [f"| {e['id']} | {e['status']} | {_cell(e['message'], 120)} |" for e in data["errors"]]
    return "\n".join(lines) + "\n"


def write_reports(data: Mapping[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Write ``eval-<dataset>.json`` and ``eval-<dataset>.md`` into ``out_dir``.

    A ``--match-basename`` run is a diagnostic beside the strict one, so it gets its own
    ``eval-<dataset>-basename.*`` files instead of overwriting the strict report.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"eval-{data['dataset']}" + ("-basename" if data.get("match_basename") else "")
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(data), encoding="utf-8")
    return json_path, md_path


# --- the system under test ---------------------------------------------------------------------


@dataclass
class EvalOptions:
    """Everything one run needs; the CLI builds it, tests build it directly."""

    dataset: Path
    url: str | None = None  # None: http://127.0.0.1:8000 if it answers, else an in-process system
    collection: str | None = None  # None: eval-<dataset name>
    concurrency: int = 4
    timeout_s: float = 90.0  # per question; above the gateway's own 60 s so its 504 arrives first
    ingest_timeout_s: float = 1800.0
    ready_timeout_s: float = 60.0
    report_dir: Path | None = Path("reports")  # None: write nothing
    data_dir: Path = Path("data")  # for the in-process system
    nats_url: str | None = None  # for the in-process system; None: a private nats-server
    fail_under: dict[str, float] = field(default_factory=dict)
    match_basename: bool = False
    progress: bool = True


async def wait_ready(url: str, timeout_s: float) -> None:
    """Poll ``GET /readyz`` until 200, at most ``timeout_s``; say what is missing if it never is."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    async with httpx.AsyncClient(base_url=url, timeout=5) as client:
        while True:
            try:
                response = await client.get("/readyz")
                if response.status_code == 200:
                    return
                body = (
                    response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
                )
                last = f"HTTP {response.status_code}, missing: {', '.join(body.get('missing', [])) or '?'}"
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if time.monotonic() > deadline:
                raise RunError(f"the system at {url} is not ready after {timeout_s:.0f}s ({last})")
            await asyncio.sleep(0.5)


async def answers_at(url: str) -> bool:
    """Whether anything answers HTTP at ``url`` (ready or not): then it is a running system, not ours to start."""
    try:
        async with httpx.AsyncClient(base_url=url, timeout=3) as client:
            await client.get("/readyz")
        return True
    except httpx.HTTPError:
        return False


@contextlib.asynccontextmanager
async def system_under_test(options: EvalOptions, say: Callable[[str], None]) -> AsyncIterator[str]:
    """Yield the base URL to evaluate: ``--url``, the ``make run`` system, or one started here."""
    if options.url:
        if not await answers_at(options.url):
            raise UsageError(f"nothing answers at --url {options.url}")
        await wait_ready(options.url, options.ready_timeout_s)
        yield options.url.rstrip("/")
        return
    if await answers_at(DEFAULT_URL):
        say(f"using the running system at {DEFAULT_URL}")
        await wait_ready(DEFAULT_URL, options.ready_timeout_s)
        yield DEFAULT_URL
        return
    async with in_process_system(options, say) as base_url:
        yield base_url


@contextlib.asynccontextmanager
async def in_process_system(options: EvalOptions, say: Callable[[str], None]) -> AsyncIterator[str]:
    """The whole system in this process, on a private nats-server unless ``--nats-url`` names one.

    A private server (store ``<data-dir>/nats-eval``, kept between runs so document statuses and
    therefore idempotent re-ingest survive) keeps the run from sharing queue groups with any other
    system on the default NATS, whose workers would answer from their own vector store.
    """
    from rag_devrun.natsserver import LocalNatsServer  # imported here: only this path needs the services
    from rag_devrun.stack import Stack, StackOptions

    server: LocalNatsServer | None = None
    nats_url = options.nats_url
    if nats_url is None:
        server = LocalNatsServer(options.data_dir / "nats-eval")
        try:
            nats_url = await asyncio.to_thread(server.start)
        except RuntimeError as exc:
            raise RunError(f"could not start a private nats-server: {exc}") from None
    say(f"nothing answers at {DEFAULT_URL}: starting the system in this process (data in {options.data_dir}/)")
    # The evaluator logs every flagged answer as a warning; the report counts them, and on this
    # console they would only break up the progress bar.
    logging.getLogger("rag.evaluator").setLevel(logging.ERROR)
    try:
        async with Stack(StackOptions(data_dir=options.data_dir, nats_url=nats_url, port=0, metrics=False)) as stack:
            await wait_ready(stack.base_url, options.ready_timeout_s)
            yield stack.base_url
    finally:
        if server:
            server.stop()


# --- one run -----------------------------------------------------------------------------------


async def _ingest(client: httpx.AsyncClient, dataset: Dataset, collection: str, options: EvalOptions) -> IngestSummary:
    files = corpus_files(dataset.corpus)
    with tqdm(total=len(files), desc="ingest", unit="doc", file=sys.stderr, disable=not options.progress) as bar:

        def progress(done: int, total: int) -> None:
            if done > bar.n:  # called on every poll: redraw only when a document finished
                bar.update(done - bar.n)

        try:
            result: LoadResult = await load_corpus(
                client, dataset.corpus, collection, timeout_s=options.ingest_timeout_s, progress=progress
            )
        except httpx.HTTPStatusError as exc:
            raise RunError(f"upload failed: HTTP {exc.response.status_code} {_error_message(exc.response)}") from None
        except (httpx.HTTPError, TimeoutError) as exc:
            raise RunError(f"ingest failed: {type(exc).__name__}: {exc}") from None
    states = [str(s.get("status")) for s in result.statuses.values()]
    listed = (await client.get("/v1/documents", params={"collection": collection})).json().get("documents", [])
    indexed_sources = {str(d.get("source")) for d in listed}
    indexed_names = {Path(s).name for s in indexed_sources}
    gold = sorted({g.source for q in dataset.questions for g in q.expect.expected_sources})
    if options.match_basename:
        missing = [s for s in gold if Path(s).name not in indexed_names]
    else:
        missing = [s for s in gold if s not in indexed_sources]
    return IngestSummary(
        documents=len(result.statuses),
        indexed=states.count("indexed"),
        unchanged=states.count("unchanged"),
        failed=states.count("failed"),
        failed_documents={p: str(result.statuses[p].get("error", "")) for p in result.failed},
        chunks=result.chunks,
        seconds=result.seconds,
        gold_sources_missing=missing,
    )


async def evaluate(base_url: str, dataset: Dataset, options: EvalOptions) -> EvalReport:
    """Ingest the corpus, ask every question, score: the whole run against a system that is up."""
    collection = options.collection or collection_for(dataset.name)
    started_at, started = datetime.now(UTC), time.perf_counter()
    limits = httpx.Limits(max_connections=options.concurrency + 2, max_keepalive_connections=options.concurrency + 2)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        ingest = await _ingest(client, dataset, collection, options)
        total = len(dataset.questions)
        with tqdm(total=total, desc="questions", unit="q", file=sys.stderr, disable=not options.progress) as bar:
            errors = 0

            def done(outcome: Outcome) -> None:
                nonlocal errors
                if outcome.error:
                    errors += 1
                    bar.set_postfix(errors=errors, refresh=False)
                bar.update(1)

            outcomes = await ask_all(
                client,
                dataset.items,
                collection,
                concurrency=options.concurrency,
                timeout_s=options.timeout_s,
                on_done=done,
            )
    return build_report(
        dataset,
        collection=collection,
        url=base_url,
        outcomes=outcomes,
        ingest=ingest,
        started_at=started_at,
        seconds=time.perf_counter() - started,
        basename_only=options.match_basename,
    )


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished run: the report as written, where it was written, and why the gate failed (if it did)."""

    report: dict[str, Any]
    failures: list[str]
    paths: tuple[Path, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures


async def run_evaluation(options: EvalOptions, say: Callable[[str], None] | None = None) -> RunResult:
    """The async entry point: pick or start the system, evaluate, write reports, apply thresholds.

    The e2e test calls this with the ``system`` fixture's URL and the same thresholds a CI command
    line would give with ``--fail-under``.
    """
    say = say or (lambda message: print(message, file=sys.stderr))
    if options.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if options.collection is not None and not valid_collection(options.collection):
        raise UsageError(f"--collection {options.collection!r}: use {COLLECTION_RULE}")
    dataset = load_dataset(options.dataset)
    async with system_under_test(options, say) as base_url:
        report = await evaluate(base_url, dataset, options)
    data = report_json(report)
    paths: tuple[Path, ...] = write_reports(data, options.report_dir) if options.report_dir else ()
    failures = check_thresholds(data, options.fail_under)
    if report.errors:
        failures.append(f"{len(report.errors)} of {report.questions} questions failed (see 'errors' in the report)")
    return RunResult(report=data, failures=failures, paths=paths)


# --- command line ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rag_evaluator.harness",
        description="Ingest a dataset's corpus, ask its questions through the HTTP API, score the answers.",
    )
    parser.add_argument("--dataset", type=Path, required=True, help="folder with corpus/ and questions.jsonl")
    parser.add_argument("--url", help=f"a running deployment (default: {DEFAULT_URL} if it answers, else in-process)")
    parser.add_argument("--collection", help="collection to ingest into and query (default: eval-<dataset name>)")
    parser.add_argument("--concurrency", type=int, default=4, help="questions in flight at once (default 4)")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per question (default 90)")
    parser.add_argument("--ingest-timeout", type=float, default=1800.0, help="seconds for the whole corpus")
    parser.add_argument("--report-dir", type=Path, default=Path("reports"), help="where reports go (default reports/)")
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="data folder of an in-process system")
    parser.add_argument("--nats-url", help="NATS for an in-process system (default: a private nats-server)")
    parser.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when METRIC is below VALUE (repeatable), e.g. retrieval.hit_at_5=0.8",
    )
    parser.add_argument(
        "--match-basename",
        action="store_true",
        help="match gold sources by file name only (for deployments that drop the folder of an upload)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def summary_lines(data: Mapping[str, Any]) -> list[str]:
    r, a, lat = data["retrieval"], data["answers"], data["latency_ms"]
    return [
        f"{data['dataset']}: {data['questions']} questions, collection {data['collection']} at {data['url']}",
        "retrieval: " + ", ".join(f"{k}={_fmt(v)}" for k, v in r.items() if k != "questions"),
        "answers:   " + ", ".join(f"{k}={_fmt(v)}" for k, v in a.items() if k != "questions"),
        f"latency:   p50={_ms(lat['p50'])} ms, p95={_ms(lat['p95'])} ms; errors: {len(data['errors'])}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run from the command line; exit 0 (pass), 1 (below a threshold or failed run), 2 (bad input)."""
    args = build_parser().parse_args(argv)
    try:
        options = EvalOptions(
            dataset=args.dataset,
            url=args.url,
            collection=args.collection,
            concurrency=args.concurrency,
            timeout_s=args.timeout,
            ingest_timeout_s=args.ingest_timeout,
            report_dir=args.report_dir,
            data_dir=args.data_dir,
            nats_url=args.nats_url,
            fail_under=parse_thresholds(args.fail_under),
            match_basename=args.match_basename,
            progress=not args.no_progress,
        )
        result = asyncio.run(run_evaluation(options))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RunError as exc:
        print(f"eval failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for line in summary_lines(result.report):
        print(line)
    for path in result.paths:
        print(f"wrote {path}")
    for failure in result.failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return EXIT_OK if result.passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
