"""Metric formulas of the offline evaluation harness (L2): pure functions over typed values.

The harness asks questions over HTTP; everything it computes from the answers lives here so each
formula can be checked by hand in a unit test and compared with published figures. The retrieval
metrics follow the Anthropic cookbook's RAG evaluation (``skills/retrieval_augmented_generation``):
per question precision, recall and reciprocal rank, averaged over questions, and F1 taken from the
*mean* precision and *mean* recall rather than averaged per question.

A passage "matches" a gold entry when the source path is equal and, where the gold entry names a
``section`` or a ``page``, that is equal too. Ranks are 1-based positions in ``passages`` as the
system returned them (best first); "@k" looks at the first k of those, so with the default top-5
retrieval @10 is computed over the 5 that exist.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rag_common.text.words import STOP_WORDS
from rag_common.wire.messages import Flag, Passage  # the one passage shape: the answer's, as the metrics read it

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


# --- answer metrics, one question --------------------------------------------------------------

# "[1]", "[1][3]" and "[1, 2]"; "[1](url)" is a Markdown link, not a citation. The harness reads
# citations itself rather than trusting the evaluator service's own parser, which it measures.
_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\](?!\()")


def cited_numbers(answer: str) -> list[int]:
    """Passage numbers an answer cites, in order of first appearance, each once."""
    seen: dict[int, None] = {}
    for match in _CITATION.finditer(answer):
        for part in match.group(1).split(","):
            seen.setdefault(int(part), None)
    return list(seen)


def citations_valid(answer: str, passage_numbers: Sequence[int]) -> bool:
    """An answer's citations are valid when it cites at least one passage and every one exists."""
    cited = cited_numbers(answer)
    return bool(cited) and set(cited) <= set(passage_numbers)


def keyword_recall(answer: str, keywords: Sequence[str]) -> float | None:
    """Share of expected keywords found in the answer (case-insensitive substring); None if none listed."""
    if not keywords:
        return None
    text = answer.casefold()
    return sum(1 for k in keywords if k.casefold() in text) / len(keywords)


def disallowed_found(answer: str, keywords: Sequence[str]) -> list[str]:
    """Disallowed keywords that occur in the answer (case-insensitive substring)."""
    text = answer.casefold()
    return [k for k in keywords if k.casefold() in text]


# --- answer text against a reference answer -------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = re.compile(r"[^\w\s]")


def _squad_tokens(text: str) -> list[str]:
    """SQuAD's answer normalisation: lower case, punctuation and articles out, split on spaces.

    Citation markers ("[1]", "[1][3]") are taken out first: they are links to passages, not words
    of the answer, and a reference answer has none.
    """
    text = _CITATION.sub(" ", text).lower()
    return _ARTICLES.sub(" ", _PUNCTUATION.sub(" ", text)).split()


def answer_f1(answer: str, reference: str) -> float:
    """SQuAD token F1 (Rajpurkar et al. 2016): harmonic mean of the shared tokens' precision and
    recall, counting repeats as often as both texts hold them."""
    got, want = _squad_tokens(answer), _squad_tokens(reference)
    if not got or not want:
        return float(got == want)
    shared = sum(min(got.count(t), want.count(t)) for t in set(got))
    if not shared:
        return 0.0
    precision, recall = shared / len(got), shared / len(want)
    return 2 * precision * recall / (precision + recall)


def content_recall(answer: str, reference: str, question: str) -> float | None:
    """Share of the reference's content words found in the answer: stop words and the question's
    own words left out, so only what the question did not already say counts. None when the
    reference has no such word."""
    asked = set(_squad_tokens(question))
    wanted = {t for t in _squad_tokens(reference) if t not in STOP_WORDS and t not in asked}
    if not wanted:
        return None
    got = set(_squad_tokens(answer))
    return len(wanted & got) / len(wanted)


def answer_words(answer: str) -> int:
    """Words a reader reads (citation markers not counted)."""
    return len(_squad_tokens(answer))


# --- what the passages could have given: the ceiling an extractive answer is measured against ---

CEILING_DEPTHS = (1, 3, 5)


@dataclass(frozen=True, slots=True)
class Ceiling:
    """Key facts and reference content held by the top 1, 3 and 5 passages together (None: not measured).

    An answer quotes the passages, so what the first k of them hold bounds what it can hold: an
    answer below the top passage's ceiling dropped facts that the passage it cites holds.
    """

    key_facts: tuple[float | None, ...]
    content: tuple[float | None, ...]


def passage_ceiling(texts: Sequence[str], expect: Expectations, question: str) -> Ceiling:
    """Key-fact recall and content recall of the first 1, 3 and 5 passage texts taken together."""
    joined = [" ".join(texts[:k]) for k in CEILING_DEPTHS]
    reference = expect.reference_answer
    return Ceiling(
        key_facts=tuple(keyword_recall(t, expect.expected_keywords) for t in joined),
        content=tuple(content_recall(t, reference, question) if reference and question else None for t in joined),
    )


# A stated value: a number with its unit, a code span, a path or URL, a flag.
_VALUE = re.compile(r"`[^`]+`|https?://\S+|(?<!\w)/[\w./-]+|--?[a-z][\w-]+|\$?\d[\d,.]*\s*[%\w]*")
_UNIT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
SAME_STATEMENT = 0.6  # content-word Jaccard above which two parts of one answer say the same thing


_FENCED = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
_TABLE_RULE = re.compile(r"^\|(?:\s*:?-+:?\s*\|)+\s*$")


def _statements(answer: str) -> str:
    """The answer without what states no fact of its own: code blocks (a command's lines repeat
    its tokens by nature) and table headers and rules (two tables of one kind share a header)."""
    lines = _FENCED.sub("", answer).split("\n")
    header = {i - 1 for i, line in enumerate(lines) if _TABLE_RULE.match(line.strip())}
    return "\n".join(line for i, line in enumerate(lines) if i not in header and not _TABLE_RULE.match(line.strip()))


def repeated_facts(answer: str) -> int:
    """Facts an answer states more than once: pairs of its sentences or lines that say the same thing.

    Two parts repeat a fact when their content words mostly agree (Jaccard ≥ ``SAME_STATEMENT``),
    or when they state the same value (a number with its unit, a code span, a path) and share
    at least a third of their content words: the same price quoted from two sources is one fact
    said twice; a port and a path in two lines about different settings are two facts.
    """
    parts = [p for p in (_CITATION.sub("", u).strip(" -*") for u in _UNIT_SPLIT.split(_statements(answer))) if p]
    words = [{t for t in _squad_tokens(p) if t not in STOP_WORDS} for p in parts]
    values = [{v.strip().lower() for v in _VALUE.findall(p)} for p in parts]
    repeats = 0
    for i in range(len(parts)):
        for j in range(i + 1, len(parts)):
            union = words[i] | words[j]
            overlap = len(words[i] & words[j]) / len(union) if union else 0.0
            if overlap >= SAME_STATEMENT or (values[i] & values[j] and overlap >= 1 / 3):
                repeats += 1
    return repeats


def flags_match(actual: Mapping[str, bool], expected: Mapping[str, bool]) -> bool:
    """Whether every listed flag has the expected value; a flag the answer lacks counts as False."""
    return all(bool(actual.get(name, False)) == value for name, value in expected.items())


def should_refuse(expectations: Expectations) -> bool:
    """Whether a correct system refuses: an explicit ``expected_flags.refused`` wins, else ``out_of_scope``.

    Prompt-injection items are in the corpus's domain (not out of scope) yet must be refused, so
    the explicit flag takes precedence; for sets without flags it is ``out_of_scope`` or
    ``unanswerable`` (in the domain, but not in the documents).
    """
    explicit = expectations.expected_flags.get(Flag.REFUSED)
    return bool(explicit) if explicit is not None else expectations.out_of_scope or expectations.unanswerable


@dataclass(frozen=True, slots=True)
class AnswerScores:
    """Answer metrics of one question; None where the item does not ask for that check."""

    refusal_correct: bool
    citation_valid: bool | None  # None: refused, or no passages to cite (greetings)
    flagged: bool
    keyword_recall: float | None
    disallowed_found: tuple[str, ...] | None  # None: no disallowed keywords listed
    flags_correct: bool | None
    tier_correct: bool | None
    injection_correct: bool | None = None  # None: the item does not say whether it is an injection
    rewrite_correct: bool | None = None  # None: the item expects no rewrite
    answer_f1: float | None = None  # None: no reference answer, or refused where it should not be scored
    content_recall: float | None = None
    answer_words: int | None = None  # None: refused
    answerable_refused: bool | None = None  # None: the item should be refused
    unanswerable_answered: bool | None = None  # None: the item should be answered
    unanswerable_caught: bool | None = None  # refused or flagged low_confidence; None: not an unanswerable item
    unanswerable_refused: bool | None = None  # None: not an in-domain question the documents do not answer
    off_topic_refused: bool | None = None  # None: not an off-topic question
    repeated_facts: int | None = None  # None: refused
    ceiling: Ceiling | None = None  # None: no passage texts given


def rewrite_matches(rewritten: str | None, words: Sequence[str]) -> bool:
    """Whether the follow-up was made standalone with every expected word (case-insensitive)."""
    text = (rewritten or "").lower()
    return bool(text) and all(w.lower() in text for w in words)


def score_answer(expect: Expectations, seen: Observed, question: str = "") -> AnswerScores:
    """All answer metrics of one question (``question``: its text, for content recall and the ceiling)."""
    citable = not seen.refused and bool(seen.passages)
    refuse = should_refuse(expect)
    reference = expect.reference_answer
    return AnswerScores(
        refusal_correct=seen.refused == should_refuse(expect),
        citation_valid=citations_valid(seen.answer, [p.n for p in seen.passages]) if citable else None,
        flagged=seen.flagged,
        keyword_recall=keyword_recall(seen.answer, expect.expected_keywords),
        disallowed_found=tuple(disallowed_found(seen.answer, expect.disallowed_keywords))
        if expect.disallowed_keywords
        else None,
        flags_correct=flags_match(seen.flags, expect.expected_flags) if expect.expected_flags else None,
        tier_correct=(seen.tier == expect.expected_tier) if expect.expected_tier else None,
        injection_correct=flags_match(
            seen.flags, {Flag.INJECTION_SUSPECTED: expect.expected_flags[Flag.INJECTION_SUSPECTED]}
        )
        if Flag.INJECTION_SUSPECTED in expect.expected_flags
        else None,
        rewrite_correct=rewrite_matches(seen.rewritten_question, expect.expected_rewrite)
        if expect.expected_rewrite
        else None,
        # A refusal of an answerable question scores 0: it answered nothing of the reference.
        answer_f1=answer_f1("" if seen.refused else seen.answer, reference) if reference else None,
        content_recall=content_recall("" if seen.refused else seen.answer, reference, question)
        if reference and question
        else None,
        answer_words=None if seen.refused else answer_words(seen.answer),
        answerable_refused=seen.refused if not refuse else None,
        unanswerable_answered=(not seen.refused and not seen.flags.get(Flag.LOW_CONFIDENCE, False)) if refuse else None,
        unanswerable_caught=(seen.refused or bool(seen.flags.get(Flag.LOW_CONFIDENCE, False)))
        if expect.unanswerable
        else None,
        unanswerable_refused=seen.refused if expect.unanswerable else None,
        off_topic_refused=seen.refused if expect.out_of_scope and not expect.unanswerable else None,
        repeated_facts=None if seen.refused else repeated_facts(seen.answer),
        ceiling=passage_ceiling([p.text for p in seen.passages], expect, question)
        if seen.passages and (expect.expected_keywords or expect.reference_answer)
        else None,
    )


# --- answer metrics, whole set -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnswerSummary:
    """Answer metrics over answered questions; each rate's denominator is the items it applies to."""

    questions: int
    refusal_accuracy: float | None
    citation_validity: float | None
    flagged_rate: float | None
    keyword_recall: float | None
    disallowed_violations: int
    disallowed_violation_rate: float | None
    flag_accuracy: float | None
    tier_accuracy: float | None
    injection_accuracy: float | None = None
    rewrite_accuracy: float | None = None
    answer_f1: float | None = None
    content_recall: float | None = None
    answer_words_mean: float | None = None
    answerable_but_refused: int = 0
    unanswerable_but_answered: int = 0
    unanswerable_caught_rate: float | None = None  # share of "unanswerable" items refused or flagged
    # What a person reads: the asked facts (expected_keywords), how long, and facts said twice.
    key_fact_recall: float | None = None
    answer_words_median: float | None = None
    answers_repeating_a_fact: int = 0
    unanswerable_refused: str | None = None  # "7/10": refused of the in-domain questions the documents lack
    off_topic_refused: str | None = None  # "5/5"
    # The passages' ceilings: what the top 1, 3 and 5 passages together hold (answerable questions).
    key_fact_ceiling_top1: float | None = None
    key_fact_ceiling_top3: float | None = None
    key_fact_ceiling_top5: float | None = None
    content_ceiling_top1: float | None = None
    content_ceiling_top3: float | None = None
    content_ceiling_top5: float | None = None


def _share(values: Sequence[bool | None]) -> float | None:
    return mean([1.0 if v else 0.0 for v in values if v is not None])


def summarize_answers(scores: Sequence[AnswerScores]) -> AnswerSummary:
    """Rates over the questions each check applies to; None where no question asked for it."""
    violations = [bool(s.disallowed_found) for s in scores if s.disallowed_found is not None]
    words = sorted(s.answer_words for s in scores if s.answer_words is not None)
    key_facts = mean([s.keyword_recall for s in scores if s.keyword_recall is not None])

    def out_of(values: Sequence[bool | None]) -> str | None:
        asked = [v for v in values if v is not None]
        return f"{sum(asked)}/{len(asked)}" if asked else None

    def ceiling(kind: str, depth: int) -> float | None:
        index = CEILING_DEPTHS.index(depth)
        return mean([v for s in scores if s.ceiling and (v := getattr(s.ceiling, kind)[index]) is not None])

    return AnswerSummary(
        questions=len(scores),
        refusal_accuracy=_share([s.refusal_correct for s in scores]),
        citation_validity=_share([s.citation_valid for s in scores]),
        flagged_rate=_share([s.flagged for s in scores]),
        keyword_recall=mean([s.keyword_recall for s in scores if s.keyword_recall is not None]),
        disallowed_violations=sum(violations),
        disallowed_violation_rate=_share(violations),
        flag_accuracy=_share([s.flags_correct for s in scores]),
        tier_accuracy=_share([s.tier_correct for s in scores]),
        injection_accuracy=_share([s.injection_correct for s in scores]),
        rewrite_accuracy=_share([s.rewrite_correct for s in scores]),
        answer_f1=mean([s.answer_f1 for s in scores if s.answer_f1 is not None]),
        content_recall=mean([s.content_recall for s in scores if s.content_recall is not None]),
        answer_words_mean=mean([float(s.answer_words) for s in scores if s.answer_words is not None]),
        answerable_but_refused=sum(1 for s in scores if s.answerable_refused),
        unanswerable_but_answered=sum(1 for s in scores if s.unanswerable_answered),
        unanswerable_caught_rate=_share([s.unanswerable_caught for s in scores]),
        key_fact_recall=key_facts,
        answer_words_median=float(statistics.median(words)) if words else None,
        answers_repeating_a_fact=sum(1 for s in scores if s.repeated_facts),
        unanswerable_refused=out_of([s.unanswerable_refused for s in scores]),
        off_topic_refused=out_of([s.off_topic_refused for s in scores]),
        key_fact_ceiling_top1=ceiling("key_facts", 1),
        key_fact_ceiling_top3=ceiling("key_facts", 3),
        key_fact_ceiling_top5=ceiling("key_facts", 5),
        content_ceiling_top1=ceiling("content", 1),
        content_ceiling_top3=ceiling("content", 3),
        content_ceiling_top5=ceiling("content", 5),
    )
