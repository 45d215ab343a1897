"""The extractive answer: the documents' own words that answer what was asked, cited (pure).

Without a language model the answer can only quote, so quality comes from what is quoted and
how much of it:

- **What is asked** (``rag_generator.asking``): the answer type (a price, a value, steps, a
  reason...) and the words the question is about.
- **What can be quoted** (``rag_common.text.quotable``): whole sentences, list items, table rows
  (rendered as readable text), and lines of code or configuration (quoted verbatim in a code
  span) - never a heading, half a PDF line or code flattened into a line of prose.
- **Choosing**: units that hold the expected type and the focus words win; a unit that opens
  with "It"/"This"/"They" is quoted only with the sentence it refers to; a fact is quoted once,
  and so is a sentence another unit holds word for word; a length budget per answer type keeps a
  value short and steps whole.
- **Conflicts** open the answer: a disagreement between sources is said first, in words.
- **Nothing that answers**: when no unit holds the question's focus (or a name it asks about),
  the reply says so (``ExtractiveReply.answered``) and the generator refuses instead of quoting
  whatever came closest.
"""

from __future__ import annotations

import difflib
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from rag_common.text.conflicts import names_subject
from rag_common.text.quotable import (
    KIND_CODE,
    KIND_ITEM,
    KIND_ROW,
    KIND_SENTENCE,
    Candidate,
    candidate_sentences,
    mask_spans,
    sentence_key,
    unique_candidates,
)
from rag_common.text.words import STOP_WORDS, content_words, names, normal_words, stem
from rag_common.wire.messages import Passage
from rag_generator.asking import AnswerType, Asked, analyse, mentions, words_of
from rag_generator.comparing import side_by_side
from rag_generator.layout import cite, following, render, with_blocks
from rag_generator.slots import SLOT_WORDS, Slot, SlotRule, asked_slot, decides, fills

# (question, sentences) -> cosine similarity of each sentence to the question, in order.
SentenceScorer = Callable[[str, Sequence[str]], Sequence[float]]
# Per passage n, each unit's cosine similarity to the question by its ``sentence_key``, computed
# before the answer (the retriever's scores of the vectors ingest stored: ``Retrieval.sentence_scores``).
StoredScores = Mapping[int, Mapping[str, float]]

NOTHING_TO_QUOTE = "The documents found hold no complete sentence to quote for this question."

# --- selection knobs -------------------------------------------------------------------------
# A further unit must be at least this relevant relative to the best one: a support answer is
# better short than padded with loosely related bullets.
RELATIVE_THRESHOLD = 0.7
# The retriever's order is evidence too, but weaker than the unit itself: the prior only breaks
# near-ties, so a clearly better sentence in passage 2 still comes first.
RANK_PRIOR = 0.05
POSITION_PRIOR = 0.003  # documents tend to lead with the gist
CONTEXT_WEIGHT = 0.3  # a question term found only in the heading above a unit counts little...
LEAD_CONTEXT_WEIGHT = 1.0  # ...or fully for the first unit under it: "How do I reset...?" -> "Click..."
# A unit that holds what the question's type asks for (a number for "how much", an imperative for
# "how do I", "because" for "why") is preferred over one that only repeats the question's words.
# Only for answers that are a value or an action: for "why" and "what is" the type's cue words
# ("because", "is a") are everywhere, and a bonus for them lost on both shared sets.
TYPE_BONUS = 0.1
_BONUS_TYPES = frozenset({AnswerType.QUANTITY, AnswerType.DATE, AnswerType.VALUE})
# How much the embedding similarity counts beside the words: 1.0 is a cosine added to a share.
SEMANTIC_WEIGHT = 1.0
SAME_VALUE_SHARE = 0.75  # of the shorter unit's content words, for two units stating the same numbers
NEAR_DUPLICATE = 0.8  # token Jaccard above which two units with the same numbers say the same
MIN_CONTAINED_WORDS = 4  # a shorter unit held word for word in a longer one is the same sentence
# Units the embedding model re-scores, best by words and rank first: it bounds the embedding
# work per answer (about 3 ms a sentence on one core), and the rest are lexically hopeless anyway.
MAX_SCORED = 12
REACH = 0.5
# A unit that fills the asked slot (a port for "which port") leads when at least this relevant
# relative to the best unit: one that only repeats the question's words does not answer it.
SLOT_REACH = 0.6
# A sentence leading into a command is quoted (with the command) for "how do I" when at least this
# relevant relative to the best unit.
COMMAND_REACH = 0.5
# An answer shorter than this reads on from its best unit, in the same passage and section.
REGION_WORDS = 85
# Words an answer may take, by what is asked: a value is a line, steps are the whole procedure.
# The first unit is always quoted whole; a further one only when it fits.
WORD_BUDGET: Mapping[AnswerType, int] = {
    AnswerType.QUANTITY: 45,
    AnswerType.DATE: 45,
    AnswerType.ENTITY: 45,
    AnswerType.VALUE: 45,
    AnswerType.YES_NO: 55,
    AnswerType.DEFINITION: 60,
    AnswerType.REASON: 70,
    AnswerType.COMPARISON: 90,
    AnswerType.LIST: 100,
    AnswerType.STEPS: 120,
    AnswerType.OTHER: 75,
}
MAX_STEPS = 8  # items of one procedure or list quoted together
# Questions whose answer is one value: of a table row, the columns asked about are quoted.
_VALUE_TYPES = frozenset({AnswerType.QUANTITY, AnswerType.VALUE, AnswerType.DATE, AnswerType.ENTITY})
# Questions whose answer is a command, a value or what to do: a sentence leading into a code block
# brings the block (the command it introduces).
_CODE_TYPES = frozenset({AnswerType.STEPS, AnswerType.VALUE, AnswerType.OTHER, AnswerType.QUANTITY})
# A question is not answered by the passages when no unit holds any of its specific focus words:
# words in at least this share of the passages say what the collection is about ("Orbitly"),
# not what this question asks ("CEO").
DOMAIN_SHARE = 0.6
# A short question is about the names it uses ("Can I pay with Bitcoin?"): one that no passage
# holds means the passages answer another question. A long question carries names for context
# ("According to Anthropic's documentation, ...") that need not appear in the passage.
SHORT_QUESTION_WORDS = 12
TYPO_SIMILARITY = 0.8  # difflib ratio at which a missing name is taken for a misspelling of a present one

# The question's word and the document's often differ ("cost" vs "price"): a few support-desk
# synonyms share one stem, so the table column headed "Price" answers "How much does it cost?".
_SYNONYMS = {
    "cost": "price",
    "fee": "price",
    "charg": "price",
    "pay": "price",
    "largest": "max",
    "biggest": "max",
    "highest": "max",
    "maximum": "max",
}
_PRONOUN_START = re.compile(
    # "So ...", "Therefore ...": a consequence is read with the sentence that gives its reason.
    r"^(it|this|that|they|these|those|he|she|its|their|such|so|thus|therefore|hence|consequently)\b"
    r"(?!\s+(?:is|are)\s+(?:why|how))",
    re.I,
)
_REPORTED_QUESTION = re.compile(r"\b(asked|wondered|wonders|wants to know)\s+(whether|if|how|what|why|when)\b", re.I)
_DETERMINER_NOUN = re.compile(r"^(this|that|these|those)\s+[a-z]+\s+(is|are|was|were|has|have|can|will)\b", re.I)

_TYPE_EVIDENCE: Mapping[AnswerType, re.Pattern[str]] = {
    AnswerType.QUANTITY: re.compile(
        r"\d|[$€£%]|\b(one|two|three|four|five|six|seven|eight|nine|ten|twelve|hundred|thousand|unlimited|free|"
        r"daily|weekly|monthly|yearly|annually|hourly)\b",
        re.I,
    ),
    AnswerType.DATE: re.compile(
        r"\b(19|20)\d\d\b|\b(january|february|march|april|may|june|july|august|september|october|november|"
        r"december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|quarter)\b|\b\d{1,2}/\d{1,2}\b",
        re.I,
    ),
    AnswerType.VALUE: re.compile(
        r"https?://|`|\S+@\S+\.\w+|(?<![\w.])/[\w.-]+/|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|:\d{2,5}\b|\bv?\d+\.\d+(\.\d+)?\b|"
        r"\b[\w-]+\.(json|ya?ml|toml|ini|conf|cfg|env|md|txt|csv|py|sh)\b|\b[\w-]+=\S|^[\w.-]+:\s|--[a-z]"
    ),
    AnswerType.STEPS: re.compile(
        r"^(go|click|open|select|choose|run|set|enter|type|press|sign|navigate|use|add|remove|install|create|"
        r"make|turn|enable|disable|contact|ask|wait|check|try|restart|reconnect|disconnect|connect|update|"
        r"upgrade|download|upload|copy|paste|follow|visit|call|email|send|fill|repeat|start|stop|delete|"
        r"invite|generate|pick|drag|log|find|write|define|specify|provide|include|review|test|save)\b"
        r"|\b(go to|click|to (fix|resolve|solve)|then)\b",
        re.I,
    ),
    AnswerType.REASON: re.compile(
        r"\b(because|due to|caused by|cause|since|so that|as a result|reason|when|if|in order to|helps?|allows?)\b",
        re.I,
    ),
    AnswerType.DEFINITION: re.compile(r"\b(is|are) (a|an|the)\b|\b(refers? to|means?|is defined as|is called)\b", re.I),
}


class ConflictLike(Protocol):
    """Documents stating different values for one subject (the evaluator's ``Conflict`` fits)."""

    @property
    def subject(self) -> str: ...

    @property
    def values(self) -> Mapping[str, Sequence[str]]: ...


@dataclass(frozen=True, slots=True)
class ExtractiveReply:
    """An extractive answer, and whether the passages hold anything that answers the question.

    ``answered`` is False when no unit holds the question's focus words or a name it asks about:
    the text then quotes what came closest, and the generator answers with the collection's
    refusal instead (``reason`` says why, for the answer's refusal reason).
    """

    text: str
    answered: bool = True
    reason: str = ""


# --- scoring ---------------------------------------------------------------------------------


@lru_cache(maxsize=16384)
def _term(word: str) -> str:
    stemmed = stem(word)
    return _SYNONYMS.get(stemmed, stemmed)


def terms(text: str) -> set[str]:
    """Salient terms of a text: stop words out, stemmed (Snowball), a few synonyms joined."""
    return {_term(w) for w in content_words(text)}


def holds_type(candidate: Candidate, answer_type: AnswerType) -> bool:
    """Whether a unit holds what a question of ``answer_type`` asks for."""
    if answer_type in (AnswerType.STEPS, AnswerType.LIST) and candidate.kind == KIND_ITEM:
        return True
    if answer_type is AnswerType.VALUE and candidate.kind in (KIND_CODE, KIND_ROW):
        return True
    evidence = _TYPE_EVIDENCE.get(answer_type)
    return bool(evidence and evidence.search(candidate.text))


@dataclass(frozen=True, slots=True)
class _Scored:
    candidate: Candidate
    relevance: float  # lexical + semantic (+ type bonus): compared against the best
    score: float  # relevance plus the rank and position prior: decides the order
    lexical: float  # the share of the question's specific focus the unit (or its heading) holds

    @property
    def key(self) -> tuple[float, int, int]:
        return (-self.score, self.candidate.rank, self.candidate.position)


def _score(
    asked: Asked,
    candidates: Sequence[Candidate],
    scorer: SentenceScorer | None,
    max_scored: int = MAX_SCORED,
    stored: StoredScores | None = None,
    domain: frozenset[str] = frozenset(),
) -> list[_Scored]:
    """Every candidate's relevance to the question, best first.

    The similarities come from ``stored`` when every shortlisted unit's passage has stored scores
    (``_stored``), else from the ``scorer`` (the model), else there are none and words alone
    decide: one answer's units are never ranked by a mix of the two (stored vectors are pooled in
    context, the model's are not).
    """
    question = asked.question
    wanted = terms(question)
    unit_terms = [terms(c.text) for c in candidates]
    context_terms = [terms(c.context) for c in candidates]
    # Inverse document frequency over the candidates: a word in every unit says little.
    known = [u | x for u, x in zip(unit_terms, context_terms, strict=True)]
    weight = {t: 1.0 + math.log((len(known) + 1) / (1 + sum(t in k for k in known))) for t in wanted}
    total = sum(weight.values())

    lexical: list[float] = []
    relevance_base: list[float] = []
    for candidate, unit, context in zip(candidates, unit_terms, context_terms, strict=True):
        in_context = LEAD_CONTEXT_WEIGHT if candidate.lead else CONTEXT_WEIGHT
        hits = sum(w * (1.0 if t in unit else in_context if t in context else 0.0) for t, w in weight.items())
        value = hits / total if total else 0.0
        lexical.append(value)
        if value and asked.answer_type in _BONUS_TYPES and holds_type(candidate, asked.answer_type):
            value += TYPE_BONUS
        relevance_base.append(value)

    def prior(c: Candidate) -> float:
        return RANK_PRIOR / (1 + c.rank) - POSITION_PRIOR * min(c.position, 10)

    order = sorted(range(len(candidates)), key=lambda i: (-(relevance_base[i] + prior(candidates[i])), i))
    # The model only re-ranks units within reach of the best by words: one that shares less than
    # half of what the best shares would need the model to be very sure, and each costs a forward
    # pass. With no shared words at all, the model alone decides among the first few.
    reach = REACH * max(0.0, max(relevance_base, default=0.0))
    semantic_scoring = scorer is not None or stored is not None
    shortlist = [i for i in order[:max_scored] if relevance_base[i] >= reach] if semantic_scoring else order
    shortlist = shortlist or order[:max_scored]
    semantic = dict.fromkeys(shortlist, 0.0)
    # One unit within reach is the answer whatever the model says of it: no model run.
    if semantic_scoring and len(shortlist) > 1:
        similarities = _stored([candidates[i] for i in shortlist], stored) if stored is not None else None
        if similarities is None and scorer is not None:
            similarities = [float(x) for x in scorer(question, [candidates[i].text for i in shortlist])]
            if len(similarities) != len(shortlist):
                raise ValueError(f"sentence scorer returned {len(similarities)} scores for {len(shortlist)} sentences")
        if similarities is None:  # a unit without a stored score and no model: words alone, as without scoring
            shortlist = order
            semantic = dict.fromkeys(shortlist, 0.0)
        else:
            semantic = {i: SEMANTIC_WEIGHT * max(0.0, s) for i, s in zip(shortlist, similarities, strict=True)}

    scored = [
        _Scored(
            candidates[i],
            relevance_base[i] + semantic[i],
            relevance_base[i] + semantic[i] + prior(candidates[i]),
            lexical[i],
        )
        for i in shortlist
    ]
    return sorted(scored, key=lambda s: s.key)


def _stored(units: Sequence[Candidate], stored: StoredScores) -> list[float] | None:
    """Each unit's stored similarity (by its passage and text), or None when a unit's passage has
    none at all (chunks indexed without sentence vectors: the model, if loaded, ranks them all).

    A passage joined with its neighbouring chunks can hold a unit that no chunk held whole (a
    sentence the chunk boundary cut in two), and a line of code has no stored vector: such a unit
    takes its passage's median stored score, neither promoted nor sunk by the semantic side, so
    words, its type and the rank prior place it (sending the whole ranking to the model instead
    cost 13 of 100 benchmark answers ~130 ms of CPU each: the generation profile).
    """
    found = []
    for unit in units:
        scores = stored.get(unit.n)
        if not scores:
            return None
        value = scores.get(sentence_key(unit.text))
        found.append(float(value) if value is not None else statistics.median(scores.values()))
    return found


def _domain_terms(passages: Sequence[Passage]) -> frozenset[str]:
    """Terms in most of the passages: what the whole collection is about ("Orbitly"), so they
    cannot tell whether this question is answered."""
    if len(passages) < 3:
        return frozenset()
    counts: dict[str, int] = {}
    for passage in passages:
        for term in terms(f"{passage.section or ''} {passage.text}"):
            counts[term] = counts.get(term, 0) + 1
    return frozenset(t for t, c in counts.items() if c >= DOMAIN_SHARE * len(passages))


def _near_duplicate(a: str, b: str) -> bool:
    """Same words (and the same numbers): quoting both would only repeat the answer. So does ``a``
    when every word of it that carries content is in ``b`` ("The Business plan is $24 per user per
    month" after "The Business plan costs $24 per user per month")."""
    if normal_words(a) == normal_words(b):
        return True
    ta, tb = set(normal_words(a).split()), set(normal_words(b).split())
    numbers_a, numbers_b = {t for t in ta if t[0].isdigit()}, {t for t in tb if t[0].isdigit()}
    if numbers_a != numbers_b:
        return False
    if len(ta & tb) >= NEAR_DUPLICATE * len(ta | tb) or ta - STOP_WORDS <= tb:
        return True
    # The same value of the same subject said two ways ("Pro plan: price per user per month $12"
    # and "The Pro plan is $12 per user per month"): one fact, however the words differ.
    content_a, content_b = {_term(t) for t in ta - STOP_WORDS}, {_term(t) for t in tb - STOP_WORDS}
    shorter = min(len(content_a), len(content_b))
    return bool(numbers_a) and shorter > 0 and len(content_a & content_b) >= SAME_VALUE_SHARE * shorter


# Two sentences run together without a space ("... long documents.Tool Use & Function Calling..."):
# of a unit that holds another whole, the shorter one reads better.
_GLUED_STOP = re.compile(r"[a-z]{2}[.!?][A-Z][a-z]")


def _contains(a: str, b: str) -> bool:
    """Whether ``a`` holds all of ``b`` word for word (and more): "PDF Upload & SummarizationLearn
    how to upload PDFs ... long documents.Tool Use & ..." holds "Learn how to upload PDFs ... long
    documents." Letters are compared without spaces, so a heading glued to a word still counts."""
    inner = _letters(b)
    return len(b.split()) >= MIN_CONTAINED_WORDS and len(inner) < len(_letters(a)) and inner in _letters(a)


@lru_cache(maxsize=4096)
def _letters(text: str) -> str:
    # Cached: each unit is compared with every chosen one, on both sides.
    return normal_words(text).replace(" ", "")


def _same_fact(a: str, b: str) -> bool:
    """Two units as read say the same: near duplicates, or one holds the other word for word."""
    return _near_duplicate(a, b) or _contains(a, b) or _contains(b, a)


def _add_unless_repeated(chosen: list[Candidate], unit: Candidate) -> list[Candidate]:
    """``chosen`` and ``unit``, unless one holds the other word for word: then the longer one, or
    the shorter when the longer is two sentences run together."""
    for i, c in enumerate(chosen):
        if _contains(unit.text, c.text) or normal_words(unit.text) == normal_words(c.text):
            return chosen
        if _contains(c.text, unit.text):
            return [*chosen[:i], unit, *chosen[i + 1 :]] if _GLUED_STOP.search(c.text) else chosen
    return [*chosen, unit]


def _opens_with_pronoun(text: str) -> bool:
    """ "It is kept for 90 days": the subject is in the sentence before. "This plan is..." names it."""
    return bool(_PRONOUN_START.match(text)) and not _DETERMINER_NOUN.match(text)


# --- choosing --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Choice:
    units: list[Candidate]  # in the order they are read
    also: dict[int, list[int]]  # index in units -> further passages saying the same


def _select(asked: Asked, scored: Sequence[_Scored], candidates: Sequence[Candidate], max_units: int) -> _Choice:
    """The best unit, then others nearly as relevant and not repeats, within the type's budget.

    When the question names things (and the best unit names one of them), a further unit must
    name one too: after "The Pro plan costs $12" for "How much is the Pro plan?", "The Business
    plan costs $24" is not more of the answer. A unit of another passage that repeats a chosen one
    is not quoted again: its citation joins the chosen unit's ("... $24 per user per month [1][3].").
    """
    budget = WORD_BUDGET[asked.answer_type]
    best = scored[0]
    chosen = _with_antecedent(best.candidate, candidates)
    # "How do I ...?" whose best unit is one step of a procedure: the procedure, in order.
    if asked.answer_type in (AnswerType.STEPS, AnswerType.LIST) and best.candidate.kind == KIND_ITEM:
        chosen = _whole_list(best.candidate, candidates)
    # The symptom, then the fix: a best unit that does not hold the type asked for is followed by
    # the next unit of its passage that does ("... SYNC-409, the connection has expired. Go to ...").
    elif asked.answer_type in (AnswerType.STEPS, AnswerType.REASON) and not holds_type(
        best.candidate, asked.answer_type
    ):
        following = _next_in_passage(best.candidate, candidates)
        if following is not None and holds_type(following, asked.answer_type):
            chosen = _add_unless_repeated(chosen, following)
    # A procedure told in sentences goes on after its first step ("Go to Settings > Export. You
    # can export all projects as CSV or JSON."): the next sentence under the same heading follows.
    elif asked.answer_type is AnswerType.STEPS and best.candidate.kind == KIND_SENTENCE:
        following = _next_in_passage(best.candidate, candidates)
        if following is not None and following.context == best.candidate.context:
            chosen = _add_unless_repeated(chosen, following)
    words = sum(len(c.text.split()) for c in chosen)
    also: dict[int, list[int]] = {}
    names = {n.lower() for n in asked.names if not _acronym(n)}
    named = names if names & words_of(best.candidate.text) else set()
    limit = max(max_units, len(chosen))
    for item in scored[1:]:
        if len(chosen) >= limit or item.relevance < RELATIVE_THRESHOLD * best.relevance:
            break
        candidate = item.candidate
        if candidate in chosen:
            continue
        if named and not named & words_of(candidate.text):
            continue
        # Compared as read: a table row and a sentence that say the same price are one fact.
        read = _readable(candidate, asked)
        same = next((i for i, c in enumerate(chosen) if _same_fact(read, _readable(c, asked))), None)
        if same is not None:
            # The same sentence with more glued to it (a card's text run into the next card's) is
            # quoted as the shorter one, once.
            if _contains(_readable(chosen[same], asked), read) and _GLUED_STOP.search(chosen[same].text):
                words += len(candidate.text.split()) - len(chosen[same].text.split())
                chosen[same], candidate = candidate, chosen[same]
            n = candidate.n
            if n != chosen[same].n and n not in also.get(same, ()):
                also.setdefault(same, []).append(n)
            continue
        if _opens_with_pronoun(candidate.text) and _previous_in_passage(candidate, candidates) not in chosen:
            continue  # "It is kept for 90 days" without the sentence that says what "it" is
        size = len(candidate.text.split())
        if words + size > budget:
            continue
        chosen.append(candidate)
        words += size
    return _Choice(_reading_order(chosen), _reindex(also, chosen, _reading_order(chosen)))


def _reading_order(chosen: Sequence[Candidate]) -> list[Candidate]:
    """The best unit's passage first, as the document reads (an antecedent stays in front of its
    pronoun), then the other passages by rank; except that a table row holding the asked value
    leads the rows chosen with it ("| port | ... 7422 |" before "| host | ... |")."""
    first = chosen[0]
    same = sorted((c for c in chosen if c.n == first.n), key=lambda c: c.position)
    if first.kind == KIND_ROW:
        same = [first, *(c for c in same if c is not first)]
    rest = sorted((c for c in chosen if c.n != first.n), key=lambda c: (c.rank, c.position))
    return same + rest


def _reindex(
    also: Mapping[int, list[int]], before: Sequence[Candidate], after: Sequence[Candidate]
) -> dict[int, list[int]]:
    return {after.index(before[i]): sorted(ns) for i, ns in also.items()}


def _previous_in_passage(unit: Candidate, candidates: Sequence[Candidate]) -> Candidate | None:
    return next((c for c in candidates if c.n == unit.n and c.position == unit.position - 1), None)


def _next_in_passage(unit: Candidate, candidates: Sequence[Candidate]) -> Candidate | None:
    return next((c for c in candidates if c.n == unit.n and c.position == unit.position + 1), None)


def _with_antecedent(unit: Candidate, candidates: Sequence[Candidate]) -> list[Candidate]:
    """The unit, preceded by the sentence its opening pronoun refers to."""
    if _opens_with_pronoun(unit.text):
        previous = _previous_in_passage(unit, candidates)
        if previous is not None and previous.kind == KIND_SENTENCE:
            return [previous, unit]
    return [unit]


def _whole_list(unit: Candidate, candidates: Sequence[Candidate]) -> list[Candidate]:
    """The list items around ``unit`` in its passage (one procedure or list), in order."""
    items = [c for c in candidates if c.n == unit.n and c.kind == KIND_ITEM and c.context == unit.context]
    items.sort(key=lambda c: c.position)
    index = items.index(unit)
    start = index
    while start > 0 and items[start - 1].position == items[start].position - 1:
        start -= 1
    end = index
    while end + 1 < len(items) and items[end + 1].position == items[end].position + 1:
        end += 1
    block = items[start : end + 1]
    if len(block) > MAX_STEPS:
        offset = min(max(0, index - start - MAX_STEPS // 2), len(block) - MAX_STEPS)
        block = block[offset : offset + MAX_STEPS]
    return block


def _answerable(
    asked: Asked, candidates: Sequence[Candidate], passages: Sequence[Passage], domain: frozenset[str]
) -> str:
    """Why the passages do not answer the question ("" when they may).

    Passing the retriever's relevance threshold is not enough: the collection's own words carry
    an in-domain question there ("Who is the CEO of Orbitly?" meets every passage on "Orbitly").
    So a question is not answered when every name it asks about is missing from the passages
    ("Does it integrate with Microsoft Teams?"), or when the word a short wh-question turns on
    is ("CEO", "employees", "founded"). A short acronym ("API", "SSO") is often written out in
    the documents, so it alone decides nothing.
    """
    everything = " ".join(f"{c.text} {c.context}" for c in candidates)
    # A file name counts too, as written ("Northwind_Standard_Benefits_Details.pdf", a name a reader
    # quotes) and its words apart ("Northwind Standard Benefits").
    everything += " " + " ".join(f"{p.source} {re.sub(r'[_./-]+', ' ', p.source)} {p.section or ''}" for p in passages)
    missing_heads = [h for h in asked.heads if not _holds_word(everything, h)]
    if missing_heads:
        return f"no passage mentions {', '.join(missing_heads)}"
    if len(asked.question.split()) > SHORT_QUESTION_WORDS:
        return ""  # a long question carries names for context; the retriever asks the collection of them
    missing = sorted(n for n in asked.names if not _acronym(n) and not mentions(everything, n))
    if missing:
        # A misspelt name ("Northwind Helth") is the name the passages hold, not another one.
        written = set(re.findall(r"\b[A-Z][\w-]+", everything))
        missing = [n for n in missing if not difflib.get_close_matches(n, written, n=1, cutoff=TYPO_SIMILARITY)]
    if missing:
        return f"no passage mentions {', '.join(missing)}"
    return ""


def _with_what_follows(choice: _Choice, candidates: Sequence[Candidate], budget: int, asked: Asked) -> _Choice:
    """The best unit's passage read on from it while the answer is short: the reason or the step
    asked for often sits in the sentence after the one that matches the question best ("...
    slowly evict clients. This avoids a thundering herd ..."). Not for a value, which is one
    unit worth more; and when the question names something, only while the units name it too ("The
    Business plan costs $24" is not more of an answer about the Pro plan)."""
    if not choice.units or choice.units[0].kind in (KIND_CODE, KIND_ROW):
        return choice  # a line of configuration or a table row is the value itself
    named = {n.lower() for n in asked.names if not _acronym(n)}
    first = choice.units[0]
    # The best passage's own units first: a unit of another passage gives way to reading on.
    units = [u for u in choice.units if u.n == first.n]
    words = sum(len(u.text.split()) for u in units)
    position = first.position
    by_position = {c.position: c for c in candidates if c.n == first.n}
    while (unit := by_position.get(position + 1)) is not None and unit.context == first.context:
        position += 1
        if unit in units:
            continue
        size = len(unit.text.split())
        if words + size > budget or unit.kind == KIND_ROW or (named and _names_another(unit.text, named)):
            break
        if asked.answer_type in _VALUE_TYPES and not holds_type(unit, asked.answer_type):
            break  # a value question reads on only while the text goes on giving values
        units.append(unit)
        words += size
    for unit in choice.units:
        size = len(unit.text.split())
        if unit.n != first.n and words + size <= budget:
            units.append(unit)
            words += size
    ordered = _reading_order(units)
    kept = [i for i, u in enumerate(choice.units) if u in ordered]
    return _Choice(ordered, {ordered.index(choice.units[i]): ns for i, ns in choice.also.items() if i in kept})


def _with_its_command(choice: _Choice, candidates: Sequence[Candidate]) -> _Choice:
    """For "how do I ...": when no chosen unit is code, the first code block after the best unit
    in its section follows, with the sentence that leads into it: a how-to explains, then shows
    the command ("... signal to JetStream that the node will not return." then
    ``nats server cluster peer-remove n4-c1``)."""
    if not choice.units or any(u.kind == KIND_CODE for u in choice.units):
        return choice
    first = choice.units[0]
    code = next(
        (
            c
            for c in sorted(candidates, key=lambda c: c.position)
            if c.n == first.n and c.kind == KIND_CODE and c.position > first.position and c.context == first.context
        ),
        None,
    )
    if code is None:
        return choice
    lead = next((c for c in candidates if c.n == code.n and c.position == code.position - 1), None)
    added = [u for u in (lead, code) if u is not None and u not in choice.units and u.kind != KIND_ROW]
    ordered = _reading_order([*choice.units, *added])
    return _Choice(ordered, {ordered.index(choice.units[i]): ns for i, ns in choice.also.items()})


def _names_another(text: str, named: set[str]) -> bool:
    """Whether a unit is about another named thing: it names something the question does not,
    and nothing it does ("The Business plan costs $24" after a question on the Pro plan)."""
    others = {n.lower() for n in names(text) if not _acronym(n)} - named
    return bool(others) and not named & words_of(text)


def _with_command(choice: _Choice, scored: Sequence[_Scored], candidates: Sequence[Candidate]) -> _Choice:
    """For "how do I ...", the command: when no chosen unit is code, the most relevant unit that
    leads into a code block follows the best one, and brings the block (``with_blocks``)."""
    if not choice.units or any(u.kind == KIND_CODE for u in choice.units):
        return choice
    best = scored[0].relevance if scored else 0.0
    for item in scored:
        if item.relevance < COMMAND_REACH * best:
            break
        unit = item.candidate
        if unit.kind != KIND_CODE and following(unit, candidates, KIND_CODE, 1):
            if unit in choice.units:
                return choice
            units = [choice.units[0], unit, *choice.units[1:]]
            also = {(i if i == 0 else i + 1): ns for i, ns in choice.also.items()}
            return _Choice(units, also)
    return choice


def _slot_first(slot: SlotRule | None, scored: Sequence[_Scored]) -> list[_Scored]:
    """The units best first, except that the best unit filling the asked slot leads when it is
    nearly as relevant: "Leafnodes listen on port 7422" before "Leafnodes connect to a hub"."""
    if slot is None or not scored or fills(scored[0].candidate, slot):
        return list(scored)
    best = scored[0].relevance
    lead = next(
        (s for s in scored[1:] if s.lexical > 0 and s.relevance >= SLOT_REACH * best and fills(s.candidate, slot)),
        None,
    )
    if lead is None:
        return list(scored)
    # It leads with the best one's standing, so the best one still follows if it adds to it.
    promoted = _Scored(lead.candidate, best, scored[0].score, lead.lexical)
    return [promoted, *(s for s in scored if s is not lead)]


def _slot_unfilled(slot: SlotRule | None, question: str, scored: Sequence[_Scored]) -> str:
    """Why the passages do not answer a question whose slot no unit near its focus fills ("" if one does)."""
    if slot is None or not decides(slot, question) or any(s.lexical > 0 and fills(s.candidate, slot) for s in scored):
        return ""
    return f"no passage near the question gives the {SLOT_WORDS[slot.slot]} it asks for"


def _acronym(name: str) -> bool:
    letters = name[:-1] if name.endswith("s") else name
    return len(letters) <= 4 and letters.isalpha() and letters.isupper()


def _holds_word(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` in some form: by stem, or for a verb in -ed by its own
    family ("founded": founder, founding; not "found", which only shares the stem)."""
    if word.endswith("ed") and len(word) > 5:
        base = word[:-2]
        return bool(re.search(rf"\b{re.escape(base)}(ed|er|ers|ing|s|ation)?\b", text, re.IGNORECASE))
    if "-" in word:  # "nats-server" is held by "NATS server" and by "nats-server"
        return all(_term(part) in terms(text) for part in word.split("-") if part not in STOP_WORDS)
    return _term(word) in terms(text)


# --- the answer ------------------------------------------------------------------------------


def extractive_reply(
    question: str,
    passages: Sequence[Passage],
    *,
    max_sentences: int = 3,
    scorer: SentenceScorer | None = None,
    conflicts: Sequence[ConflictLike] = (),
    excluded: Mapping[int, Sequence[tuple[int, int]]] | None = None,
    max_scored: int = MAX_SCORED,
    stored: StoredScores | None = None,
) -> ExtractiveReply:
    """Answer with the passages' own units, the one that best answers what was asked first.

    Relevance is the lexical overlap of the question's focus terms, a bonus for holding the
    expected answer type, and, when ``stored`` scores or a ``scorer`` are given, the embedding
    similarity, with a small prior for the retriever's order. Further units are added only when
    nearly as relevant as the best, within the answer type's word budget (steps: the whole
    procedure). A conflict whose subject the question or the quoted units name opens the answer.
    ``excluded`` character ranges (per passage ``n``) are never quoted.
    """
    if max_sentences < 1:
        raise ValueError(f"max_sentences must be at least 1, got {max_sentences}")
    asked = analyse(question)
    candidates = unique_candidates(candidate_sentences(passages, excluded=excluded, code=True))
    # "A user asked whether the price changed": a question reported, not an answer.
    candidates = [c for c in candidates if not _REPORTED_QUESTION.search(c.text)] or candidates
    if asked.answer_type not in (AnswerType.VALUE, AnswerType.STEPS):
        # Code is quoted for what it holds (a port, a command), not as an answer to "why" or "what is".
        candidates = [c for c in candidates if c.kind != KIND_CODE] or candidates
    if not candidates:
        return ExtractiveReply(NOTHING_TO_QUOTE, answered=False, reason="no complete sentence to quote")
    domain = _domain_terms(passages)
    scored = _score(asked, candidates, scorer, max_scored, stored, domain)
    slot = asked_slot(question)
    unanswered = _answerable(asked, candidates, passages, domain) or _slot_unfilled(slot, question, scored)
    max_units = MAX_STEPS if asked.answer_type in (AnswerType.STEPS, AnswerType.LIST) else max_sentences
    if asked.answer_type is AnswerType.COMPARISON:
        shortlisted = [s.candidate for s in scored]
        ranked = shortlisted + [c for c in candidates if c not in set(shortlisted)]
        pairs = side_by_side(question, ranked, terms)
        if pairs:
            text = "\n".join(f"- **{side}**: {cite(unit.text, [unit.n])}" for side, unit in pairs)
            return ExtractiveReply(text, answered=not unanswered, reason=unanswered)
    if scored[0].relevance > 0:
        choice = _select(asked, _slot_first(slot, scored), candidates, max_units)
    else:
        first = min(c.rank for c in candidates)
        choice = _Choice([c for c in candidates if c.rank == first][: min(2, max_sentences)], {})

    if asked.answer_type is AnswerType.STEPS or (slot is not None and slot.slot is Slot.COMMAND):
        choice = _with_command(choice, scored, candidates)
    if scored[0].relevance > 0:
        choice = _with_what_follows(choice, candidates, REGION_WORDS, asked)
        if asked.answer_type is AnswerType.STEPS:
            choice = _with_its_command(choice, candidates)
    units = with_blocks(
        choice.units,
        candidates,
        code=asked.answer_type in _CODE_TYPES,
        whole_code=asked.answer_type in (AnswerType.STEPS, AnswerType.OTHER),
    )
    also = {units.index(u): ns for i, ns in choice.also.items() if (u := choice.units[i]) in units}
    titled = {i: f"{u.title}: {u.text}" for i, u in enumerate(units) if u.title and u.kind != KIND_ROW}
    stated = _conflict_sentences(question, units, passages, conflicts, excluded or {})
    notes = [sentence for sentence, _ in stated]
    # The notice names each source's value: a unit that only repeats one of them says it twice.
    kept = [i for i, u in enumerate(units) if not any(_restates(u, conflict) for _, conflict in stated)]
    if kept and len(kept) < len(units):
        also = {kept.index(i): also[i] for i in kept if i in also}
        titled = {kept.index(i): titled[i] for i in kept if i in titled}
        units = [units[i] for i in kept]
    elif not kept:
        units = []
    columns = terms(question) if asked.answer_type in _VALUE_TYPES else set()
    body = render(units, also, titled, lambda header: bool(terms(header) & columns)) if units else ""
    text = "\n\n".join(part for part in [*notes, body] if part)
    return ExtractiveReply(text, answered=not unanswered, reason=unanswered)


def extractive_answer(question: str, passages: Sequence[Passage], **options: Any) -> str:
    """The text of ``extractive_reply`` (whether or not the passages answer the question)."""
    return extractive_reply(question, passages, **options).text


def _readable(candidate: Candidate, asked: Asked) -> str:
    """A unit as a reader should see it: a table row as a phrase, code in a code span."""
    if candidate.kind == KIND_ROW:
        return readable_row(candidate.text, asked)
    if candidate.kind == KIND_CODE:
        span = f"`{candidate.text.replace('`', '')}`"
        return f"{candidate.intro} {span}" if candidate.intro else span
    # A card's name says what the card is about: "GitHub prompting tutorial: An example-filled tutorial...".
    if candidate.title:
        return f"{candidate.title}: {candidate.text}"
    return candidate.text


def readable_row(row: str, asked: Asked) -> str:
    """ "Plan: Business; Price per user per month: $24; Storage: 1 TB" as "Business plan: price per
    user per month $24, storage 1 TB"; for a value question only the asked columns
    ("Business plan: storage 1 TB")."""
    cells = [cell.partition(": ") for cell in row.split("; ")]
    pairs = [(h.strip(), v.strip()) for h, sep, v in cells if sep and h.strip() and v.strip()]
    if len(pairs) < 2:
        return row
    (head, subject), rest = pairs[0], pairs[1:]
    named = f"{subject} {head.lower()}" if len(head.split()) == 1 and len(subject.split()) <= 3 else f"{head} {subject}"
    if asked.answer_type in (AnswerType.QUANTITY, AnswerType.VALUE, AnswerType.DATE, AnswerType.ENTITY):
        focus = {_term(w) for w in content_words(asked.question)}
        picked = [(h, v) for h, v in rest if terms(h) & focus]
        rest = picked or rest
    described = ", ".join(f"{_lower_first(h)} {v}" for h, v in rest)
    return f"{named}: {described}."


def _lower_first(header: str) -> str:
    """ "Price per user" -> "price per user"; "API calls" and "SSO" keep their capitals."""
    first, _, others = header.partition(" ")
    if first.isupper() or any(c.isupper() for c in first[1:]):
        return header
    return f"{first.lower()} {others}".strip()


def _conflict_sentences(
    question: str,
    chosen: Sequence[Candidate],
    passages: Sequence[Passage],
    conflicts: Sequence[ConflictLike],
    excluded: Mapping[int, Sequence[tuple[int, int]]],
) -> list[tuple[str, ConflictLike]]:
    """One sentence per relevant conflict, naming each source's value with its citation, with the conflict."""
    asked = f"{question} {' '.join(c.text for c in chosen)}"
    chosen_ns = [c.n for c in chosen]
    sentences: list[tuple[str, ConflictLike]] = []
    for conflict in conflicts:
        if not conflict.subject.split() or not names_subject(asked, conflict.subject.lower()):
            continue
        claims = []
        for source, values in conflict.values.items():
            if not values:
                continue
            n = _passage_for(source, values, passages, chosen_ns, excluded)
            if n is not None:
                claims.append(f"{source} says {_either(list(values))} [{n}]")
        if len(claims) >= 2:
            listed = ", ".join(claims[:-1]) + (" and " if len(claims) > 2 else ", while ") + claims[-1]
            sentences.append((f"The sources disagree on {_display(conflict.subject, question)}: {listed}.", conflict))
    return sentences


def _restates(unit: Candidate, conflict: ConflictLike) -> bool:
    """Whether a unit states one of a conflict's values for its subject ("The Pro plan is $12 ...")."""
    values = {v for vs in conflict.values.values() for v in vs}
    return any(v in unit.text for v in values) and names_subject(unit.text.lower(), conflict.subject.lower())


def _passage_for(
    source: str,
    values: Sequence[str],
    passages: Sequence[Passage],
    preferred: Sequence[int],
    excluded: Mapping[int, Sequence[tuple[int, int]]],
) -> int | None:
    """The passage of ``source`` stating one of ``values`` outside excluded text, quoted ones first."""
    holding = [
        p
        for p in passages
        if p.source == source and any(v in mask_spans(p.text, excluded.get(p.n, ())) for v in values)
    ]
    if not holding:
        return None
    return min(holding, key=lambda p: (p.n not in preferred, passages.index(p))).n


def _either(values: Sequence[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + f" or {values[-1]}"


def _display(subject: str, question: str) -> str:
    """The subject as the user wrote it ("Pro"), else as the conflict names it."""
    match = re.search(rf"(?<!\w){re.escape(subject)}(?!\w)", question, re.IGNORECASE)
    return match.group() if match else subject
