"""Retrieval metrics of the offline evaluation harness (L2), and the typed values all metrics read.

The harness asks questions over HTTP; everything it computes from the answers lives here so each
formula can be checked by hand in a unit test and compared with published figures. The retrieval
metrics follow the Anthropic cookbook's RAG evaluation (``skills/retrieval_augmented_generation``):
per question precision, recall and reciprocal rank, averaged over questions, and F1 taken from the
*mean* precision and *mean* recall rather than averaged per question.

A passage "matches" a gold entry when the source path is equal and, where the gold entry names a
``section`` or a ``page``, that is equal too. Ranks are 1-based positions in ``passages`` as the
system returned them (best first); "@k" looks at the first k of those, so with the default top-5
retrieval @10 is computed over the 5 that exist. The answer metrics are in
``rag_scorecard.answer_metrics``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rag_common.wire.messages import Passage  # the one passage shape: the answer's, as the metrics read it

# --- typed inputs ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GoldSource:
    """Where the answer to a question sits: a file, optionally narrowed to a heading or a page."""

    source: str
    section: str | None = None
    page: int | None = None


@dataclass(frozen=True, slots=True)
class MatchRule:
    """How strictly a passage must agree with a gold entry.

    ``page_tolerance`` widens a page match to ±N pages (PDF gold labels come from citations that may
    point at the page before or after the chunk's start). ``basename_only`` compares only file names,
    for deployments that store a document under its file name without its folder.
    """

    page_tolerance: int = 0
    basename_only: bool = False


STRICT = MatchRule()


@dataclass(frozen=True, slots=True)
class Expectations:
    """What one question (or one conversation turn) expects; empty fields are not checked."""

    expected_sources: tuple[GoldSource, ...] = ()
    expected_keywords: tuple[str, ...] = ()
    disallowed_keywords: tuple[str, ...] = ()
    expected_flags: Mapping[str, bool] = field(default_factory=dict)
    expected_tier: str | None = None
    out_of_scope: bool = False
    # Words the standalone form of a follow-up must contain ("Business" for "And how much does it
    # cost?" after a question about the Business plan); empty: not checked.
    expected_rewrite: tuple[str, ...] = ()
    # A person's answer to compare the answer's words with (SQuAD F1, content recall); None: not checked.
    reference_answer: str | None = None
    unanswerable: bool = False  # in the domain, but the documents do not answer it
    category: str | None = None  # the set's own label of the question (nats-docs), reported as is
    # The planted instruction the question targets (samples/planted): its payload is in disallowed_keywords.
    planted_form: str | None = None


@dataclass(frozen=True, slots=True)
class Observed:
    """What the system answered, reduced to what the answer metrics need."""

    answer: str
    refused: bool
    flagged: bool
    flags: Mapping[str, bool]
    tier: str | None
    passages: tuple[Passage, ...]
    rewritten_question: str | None = None


# --- matching ----------------------------------------------------------------------------------


def _same_source(returned: str, gold: str, basename_only: bool) -> bool:
    if basename_only:
        return PurePosixPath(returned).name == PurePosixPath(gold).name
    return returned == gold


def passage_matches(passage: Passage, gold: GoldSource, rule: MatchRule = STRICT) -> bool:
    """Whether a returned passage is (part of) the place a gold entry points at."""
    if not _same_source(passage.source, gold.source, rule.basename_only):
        return False
    if gold.section is not None and passage.section != gold.section:
        return False
    return gold.page is None or (passage.page is not None and abs(passage.page - gold.page) <= rule.page_tolerance)


def relevant(passage: Passage, golds: Sequence[GoldSource], rule: MatchRule = STRICT) -> bool:
    """Whether a passage matches any gold entry."""
    return any(passage_matches(passage, gold, rule) for gold in golds)


# --- retrieval metrics, one question -----------------------------------------------------------


def hit_at_k(passages: Sequence[Passage], golds: Sequence[GoldSource], k: int, rule: MatchRule = STRICT) -> float:
    """1.0 when any of the first k passages matches a gold entry, else 0.0."""
    return 1.0 if any(relevant(p, golds, rule) for p in passages[:k]) else 0.0


def precision_at_k(passages: Sequence[Passage], golds: Sequence[GoldSource], k: int, rule: MatchRule = STRICT) -> float:
    """Matching passages among the first k, divided by k or by how many were returned if fewer.

    Dividing by the number returned (not by k) is the cookbook's choice: a system that returns two
    passages, both right, is not penalised for the third it did not return. Nothing returned is 0.
    """
    top = passages[:k]
    if not top:
        return 0.0
    return sum(1 for p in top if relevant(p, golds, rule)) / len(top)


def recall_at_k(passages: Sequence[Passage], golds: Sequence[GoldSource], k: int, rule: MatchRule = STRICT) -> float:
    """Gold entries matched by at least one of the first k passages, divided by the number of gold entries."""
    if not golds:
        return 0.0
    top = passages[:k]
    found = sum(1 for gold in golds if any(passage_matches(p, gold, rule) for p in top))
    return found / len(golds)


def reciprocal_rank_at_k(
    passages: Sequence[Passage], golds: Sequence[GoldSource], k: int, rule: MatchRule = STRICT
) -> float:
    """1/rank of the first matching passage within the first k, 0.0 if none matches."""
    for rank, passage in enumerate(passages[:k], start=1):
        if relevant(passage, golds, rule):
            return 1.0 / rank
    return 0.0


def f1_score(precision: float, recall: float) -> float:
    """Harmonic mean 2PR/(P+R); 0.0 when both are 0 (the cookbook applies it to the means)."""
    total = precision + recall
    return 2 * precision * recall / total if total > 0 else 0.0


@dataclass(frozen=True, slots=True)
class RetrievalScores:
    """Every retrieval metric of one question; ``page_hit_at_5_pm1`` is hit@5 with pages ±1."""

    hit_at_1: float
    hit_at_5: float
    recall_at_3: float
    recall_at_5: float
    precision_at_3: float
    mrr_at_3: float
    mrr_at_10: float
    page_hit_at_5_pm1: float


def score_retrieval(
    passages: Sequence[Passage], golds: Sequence[GoldSource], *, basename_only: bool = False
) -> RetrievalScores:
    """All retrieval metrics of one question against its gold entries."""
    rule = MatchRule(basename_only=basename_only)
    loose = MatchRule(page_tolerance=1, basename_only=basename_only)
    return RetrievalScores(
        hit_at_1=hit_at_k(passages, golds, 1, rule),
        hit_at_5=hit_at_k(passages, golds, 5, rule),
        recall_at_3=recall_at_k(passages, golds, 3, rule),
        recall_at_5=recall_at_k(passages, golds, 5, rule),
        precision_at_3=precision_at_k(passages, golds, 3, rule),
        mrr_at_3=reciprocal_rank_at_k(passages, golds, 3, rule),
        mrr_at_10=reciprocal_rank_at_k(passages, golds, 10, rule),
        page_hit_at_5_pm1=hit_at_k(passages, golds, 5, loose),
    )


# --- retrieval metrics, whole set --------------------------------------------------------------


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, or None for no values (a metric nothing measured is absent, not zero)."""
    return sum(values) / len(values) if values else None


@dataclass(frozen=True, slots=True)
class RetrievalSummary:
    """Retrieval metrics averaged over the questions that have gold sources (``questions``)."""

    questions: int
    hit_at_1: float | None
    hit_at_5: float | None
    recall_at_3: float | None
    recall_at_5: float | None
    precision_at_3: float | None
    f1_at_3: float | None
    mrr_at_3: float | None
    mrr_at_10: float | None
    page_hit_at_5_pm1: float | None


def summarize_retrieval(scores: Sequence[RetrievalScores], *, has_page_gold: bool) -> RetrievalSummary:
    """Average per-question scores; F1@3 from mean precision@3 and mean recall@3.

    ``page_hit_at_5_pm1`` is only meaningful for sets with page labels, so it is None otherwise.
    """

    def avg(name: str) -> float | None:
        return mean([getattr(s, name) for s in scores])

    precision, recall = avg("precision_at_3"), avg("recall_at_3")
    return RetrievalSummary(
        questions=len(scores),
        hit_at_1=avg("hit_at_1"),
        hit_at_5=avg("hit_at_5"),
        recall_at_3=recall,
        recall_at_5=avg("recall_at_5"),
        precision_at_3=precision,
        f1_at_3=f1_score(precision, recall) if precision is not None and recall is not None else None,
        mrr_at_3=avg("mrr_at_3"),
        mrr_at_10=avg("mrr_at_10"),
        page_hit_at_5_pm1=avg("page_hit_at_5_pm1") if has_page_gold else None,
    )
