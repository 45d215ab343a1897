"""The report: per-question detail, summaries, ``reports/eval-<dataset>.json`` and ``.md``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rag_common.wire.messages import Flag, Passage
from rag_scorecard.answer_metrics import AnswerScores, AnswerSummary, score_answer, summarize_answers
from rag_scorecard.client import Outcome, QuestionError
from rag_scorecard.dataset import Dataset
from rag_scorecard.markdown import render_markdown
from rag_scorecard.metrics import (
    GoldSource,
    MatchRule,
    Observed,
    RetrievalScores,
    RetrievalSummary,
    relevant,
    score_retrieval,
    summarize_retrieval,
)
from rag_scorecard.planted import InjectionSummary, summarize_injection
from rag_scorecard.stats import Percentiles, percentiles, stage_percentiles


def observed(body: Mapping[str, Any]) -> Observed:
    """The answer JSON of ``POST /v1/query`` reduced to what the metrics read."""
    flags = {str(k): bool(v) for k, v in (body.get("flags") or {}).items()}
    passages = tuple(
        Passage.model_validate({"n": i, **p, "section": p.get("section") or ""})
        for i, p in enumerate(body.get("passages") or [], start=1)
    )
    return Observed(
        answer=str(body.get("answer", "")),
        refused=flags.get(Flag.REFUSED, False),
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
    injection: InjectionSummary | None = None  # planted forms (samples/planted); None when the set has none


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
    answers = score_answer(q.expect, seen, q.question)
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
        injection=summarize_injection(
            [(o.question.expect, observed(o.body)) for o in answered if o.body is not None],
            MatchRule(basename_only=basename_only),
        ),
    )


def report_json(report: EvalReport) -> dict[str, Any]:
    data: dict[str, Any] = _rounded(report.model_dump(mode="json"))
    return data


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
