"""How relevant each quotable unit is to a question (pure): words, the answer type, embeddings.

Relevance is the share of the question's focus terms a unit holds (weighted by how rare each is
among the units; a term only in the heading above counts little), a bonus for holding what a
value question asks for, and the embedding similarity when stored vectors or a model give one,
with a small prior for the retriever's order that only breaks near-ties.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag_common.text.quotable import KIND_CODE, KIND_ITEM, KIND_ROW, Candidate, sentence_key
from rag_common.text.words import content_words, stem
from rag_generator.asking import AnswerType, Asked

# (question, sentences) -> cosine similarity of each sentence to the question, in order.
SentenceScorer = Callable[[str, Sequence[str]], Sequence[float]]
# Per passage n, each unit's cosine similarity to the question by its ``sentence_key``, computed
# before the answer (the retriever's scores of the vectors ingest stored: ``Retrieval.sentence_scores``).
StoredScores = Mapping[int, Mapping[str, float]]

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
# Units the embedding model re-scores, best by words and rank first: it bounds the embedding
# work per answer (about 3 ms a sentence on one core), and the rest are lexically hopeless anyway.
MAX_SCORED = 12
REACH = 0.5

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


@lru_cache(maxsize=16384)
def term(word: str) -> str:
    stemmed = stem(word)
    return _SYNONYMS.get(stemmed, stemmed)


def terms(text: str) -> set[str]:
    """Salient terms of a text: stop words out, stemmed (Snowball), a few synonyms joined."""
    return {term(w) for w in content_words(text)}


def holds_type(candidate: Candidate, answer_type: AnswerType) -> bool:
    """Whether a unit holds what a question of ``answer_type`` asks for."""
    if answer_type in (AnswerType.STEPS, AnswerType.LIST) and candidate.kind == KIND_ITEM:
        return True
    if answer_type is AnswerType.VALUE and candidate.kind in (KIND_CODE, KIND_ROW):
        return True
    evidence = _TYPE_EVIDENCE.get(answer_type)
    return bool(evidence and evidence.search(candidate.text))


@dataclass(frozen=True, slots=True)
class Scored:
    candidate: Candidate
    relevance: float  # lexical + semantic (+ type bonus): compared against the best
    score: float  # relevance plus the rank and position prior: decides the order
    lexical: float  # the share of the question's specific focus the unit (or its heading) holds

    @property
    def key(self) -> tuple[float, int, int]:
        return (-self.score, self.candidate.rank, self.candidate.position)


def score_units(
    asked: Asked,
    candidates: Sequence[Candidate],
    scorer: SentenceScorer | None,
    max_scored: int = MAX_SCORED,
    stored: StoredScores | None = None,
) -> list[Scored]:
    """Every candidate's relevance to the question, best first.

    The similarities come from ``stored`` when any passage has stored scores (``_stored``), else
    from the ``scorer`` (the model), else there are none and words alone
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
        Scored(
            candidates[i],
            relevance_base[i] + semantic[i],
            relevance_base[i] + semantic[i] + prior(candidates[i]),
            lexical[i],
        )
        for i in shortlist
    ]
    return sorted(scored, key=lambda s: s.key)


def _stored(units: Sequence[Candidate], stored: StoredScores) -> list[float] | None:
    """Each unit's stored similarity (by its passage and text), or None when no passage has any
    (a collection indexed without sentence vectors: the model, if loaded, ranks the units).

    A passage joined with its neighbouring chunks can hold a unit that no chunk held whole (a
    sentence the chunk boundary cut in two), and a line of code has no stored vector: such a unit
    takes its passage's median stored score, neither promoted nor sunk by the semantic side, so
    words, its type and the rank prior place it. A passage with no stored score at all (a chunk of
    code or navigation alone) gives its units the median of the other passages' scores, for the
    same reason: sending the whole ranking to the model instead cost one benchmark question in ten
    about 100 ms of CPU, more than the rest of its answer.
    """
    every = [value for scores in stored.values() for value in scores.values()]
    if not every:
        return None
    overall = statistics.median(every)
    found = []
    for unit in units:
        scores = stored.get(unit.n)
        if not scores:
            found.append(overall)
            continue
        value = scores.get(sentence_key(unit.text))
        found.append(float(value) if value is not None else statistics.median(scores.values()))
    return found
