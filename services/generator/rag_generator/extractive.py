"""The extractive answer: the documents' own best sentences, readable and cited (pure).

Without a language model the answer can only quote, so quality comes from what is quoted: whole
sentences (never a heading or half a PDF line), the one that best answers the question first,
each with the citation of its passage, and a disagreement between sources said in words rather
than left for the reader to spot in two figures quoted side by side.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from rag_common.conflicts import names_subject
from rag_common.messages import Passage
from rag_common.quotable import (
    KIND_ITEM,
    KIND_ROW,
    KIND_SENTENCE,
    Candidate,
    candidate_sentences,
    mask_spans,
    normal_words,
    sentence_key,
    unique_candidates,
)

# (question, sentences) -> cosine similarity of each sentence to the question, in order.
SentenceScorer = Callable[[str, Sequence[str]], Sequence[float]]
# Per passage n, each unit's cosine similarity to the question by its ``sentence_key``, computed
# before the answer (the retriever's scores of the vectors ingest stored: ``Retrieval.sentence_scores``).
StoredScores = Mapping[int, Mapping[str, float]]

EXTRACTIVE_PREFIX = "From the documents:"
NOTHING_TO_QUOTE = "The documents found hold no complete sentence to quote for this question."

# --- selection knobs -------------------------------------------------------------------------
# A further sentence must be at least this relevant relative to the best one: a support answer is
# better short than padded with loosely related bullets.
RELATIVE_THRESHOLD = 0.7
# The retriever's order is evidence too, but weaker than the sentence itself: the prior only
# breaks near-ties, so a clearly better sentence in passage 2 still comes first.
RANK_PRIOR = 0.05
POSITION_PRIOR = 0.003  # documents tend to lead with the gist
CONTEXT_WEIGHT = 0.3  # a question term found only in the heading above a sentence counts little...
LEAD_CONTEXT_WEIGHT = 1.0  # ...or fully for the first sentence under it: "How do I reset...?" -> "Click..."
QUANTITY_BONUS = 0.1  # "how much / how long" questions want the sentence with the number
NEAR_DUPLICATE = 0.8  # token Jaccard above which two sentences with the same numbers say the same
# Sentences the embedding model re-scores, best by words and rank first: it bounds the embedding
# work per answer (about 3 ms a sentence on one core), and the rest are lexically hopeless anyway.
MAX_SCORED = 12
REACH = 0.5

# --- terms -----------------------------------------------------------------------------------
_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_TOKEN_CASED = re.compile(r"[A-Za-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by can could do does did for from has have had how i if in is it its me my of on or "
    "our please should tell the this that these those to was were we what when where which who whom why will "
    "with would you your there their them they about into than then so any some much many get got us use "
    "used using need want know not".split()
)
# The question's word and the document's often differ ("cost" vs "price"): a few support-desk
# synonyms share one key so the table row headed "Price" answers "How much does it cost?".
_SYNONYMS = {"cost": "pric", "fee": "pric", "charg": "pric"}
_QUANTITY_QUESTION = re.compile(
    r"\b(how (much|many|long|often|big|large|soon|fast|old)|price|cost|fee|limit|maximum|minimum|when|what time)\b",
    re.IGNORECASE,
)


class ConflictLike(Protocol):
    """Documents stating different values for one subject (the evaluator's ``Conflict`` fits)."""

    @property
    def subject(self) -> str: ...

    @property
    def values(self) -> Mapping[str, Sequence[str]]: ...


# --- scoring ---------------------------------------------------------------------------------


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    """A crude stem, enough for "costs"/"cost" and "pricing"/"price" to meet."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    elif len(word) > 4 and word.endswith("es") and word[-3] in "sxz":
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "lsz0123456789":
        word = word[:-1]
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return _SYNONYMS.get(word, word)


def terms(text: str) -> set[str]:
    """Salient terms of a text: stop words out, stemmed, so question and sentence can be compared."""
    return {_stem(w) for w in _TOKEN.findall(text.lower()) if w not in _STOP and (len(w) > 1 or w.isdigit())}


@dataclass(frozen=True, slots=True)
class _Scored:
    candidate: Candidate
    relevance: float  # lexical + semantic (+ quantity bonus): compared against the best
    score: float  # relevance plus the rank and position prior: decides the order

    @property
    def key(self) -> tuple[float, int, int]:
        return (-self.score, self.candidate.rank, self.candidate.position)


def _score(
    question: str,
    candidates: Sequence[Candidate],
    scorer: SentenceScorer | None,
    max_scored: int = MAX_SCORED,
    stored: StoredScores | None = None,
) -> list[_Scored]:
    """Every candidate's relevance to the question, best first.

    The similarities come from ``stored`` when every shortlisted unit's passage has stored scores
    (``_stored``), else from the ``scorer`` (the model), else there are none and words alone
    decide: one answer's units are never ranked by a mix of the two (stored vectors are pooled in
    context, the model's are not).
    """
    wanted = terms(question)
    unit_terms = [terms(c.text) for c in candidates]
    context_terms = [terms(c.context) for c in candidates]
    # Inverse document frequency over the candidates: "Orbitly" in every sentence says little.
    known = [u | x for u, x in zip(unit_terms, context_terms, strict=True)]
    weight = {t: 1.0 + math.log((len(known) + 1) / (1 + sum(t in k for k in known))) for t in wanted}
    total = sum(weight.values())
    wants_quantity = bool(_QUANTITY_QUESTION.search(question))

    lexical: list[float] = []
    for candidate, unit, context in zip(candidates, unit_terms, context_terms, strict=True):
        in_context = LEAD_CONTEXT_WEIGHT if candidate.lead else CONTEXT_WEIGHT
        hits = sum(w * (1.0 if t in unit else in_context if t in context else 0.0) for t, w in weight.items())
        value = hits / total if total else 0.0
        if value and wants_quantity and re.search(r"[0-9$€£]", candidate.text):
            value += QUANTITY_BONUS
        lexical.append(value)

    def prior(c: Candidate) -> float:
        return RANK_PRIOR / (1 + c.rank) - POSITION_PRIOR * min(c.position, 10)

    order = sorted(range(len(candidates)), key=lambda i: (-(lexical[i] + prior(candidates[i])), i))
    # The model only re-ranks sentences within reach of the best by words: one that shares less
    # than half of what the best shares would need the model to be very sure, and each costs a
    # forward pass. With no shared words at all, the model alone decides among the first few.
    reach = REACH * max(lexical, default=0.0)
    semantic_scoring = scorer is not None or stored is not None
    shortlist = [i for i in order[:max_scored] if lexical[i] >= reach] if semantic_scoring else order
    semantic = dict.fromkeys(shortlist, 0.0)
    # One sentence within reach is the answer whatever the model says of it: no model run.
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
            semantic = {i: max(0.0, s) for i, s in zip(shortlist, similarities, strict=True)}

    scored = [
        _Scored(candidates[i], lexical[i] + semantic[i], lexical[i] + semantic[i] + prior(candidates[i]))
        for i in shortlist
    ]
    return sorted(scored, key=lambda s: s.key)


def _stored(units: Sequence[Candidate], stored: StoredScores) -> list[float] | None:
    """Each unit's stored similarity (by its passage and text), or None when a unit's passage has
    none at all (chunks indexed without sentence vectors: the model, if loaded, ranks them all).

    A passage joined with its neighbouring chunks can hold a unit that no chunk held whole: a
    sentence or table the chunk boundary cut in two reads as one unit once the chunks are joined,
    and has no vector. It takes its passage's median stored score: a middling unit of that passage,
    neither promoted nor sunk by the semantic side, so words and the rank prior place it. (Sending
    the whole ranking to the model instead cost 13 of 100 benchmark answers ~130 ms of CPU each:
    docs/BENCHMARKS.md, ninth session.)
    """
    found = []
    for unit in units:
        scores = stored.get(unit.n)
        if not scores:
            return None
        value = scores.get(sentence_key(unit.text))
        found.append(float(value) if value is not None else statistics.median(scores.values()))
    return found


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
    return len(ta & tb) >= NEAR_DUPLICATE * len(ta | tb) or ta - _STOP <= tb


def _names(text: str) -> set[str]:
    """Proper names of a question ("Pro", "GitHub"): capitalised words after its first word."""
    words = _TOKEN_CASED.findall(text)[1:]
    return {w.lower() for w in words if w[0].isupper() and w.lower() not in _STOP}


def _select(
    question: str, scored: Sequence[_Scored], max_sentences: int
) -> tuple[list[Candidate], dict[int, list[int]]]:
    """The best unit, then up to ``max_sentences - 1`` others nearly as relevant and not repeats;
    and, per chosen unit (by its index), the further passages that say the same.

    When the question names things (and the best unit names one of them), a further unit must
    name one too: after "The Pro plan costs $12" for "How much is the Pro plan?", "The Business
    plan costs $24" is not more of the answer, however many words it shares with the question;
    for "What uptime do Business and Enterprise get?" both plans' sentences are. A unit of another
    passage that repeats a chosen one is not quoted again: its citation joins the chosen unit's
    ("... $24 per user per month [1][3].").
    """
    best = scored[0]
    chosen = [best.candidate]
    also: dict[int, list[int]] = {}
    names = _names(question)
    named = names if names & set(normal_words(best.candidate.text).split()) else set()
    for item in scored[1:]:
        if len(chosen) >= max_sentences or item.relevance < RELATIVE_THRESHOLD * best.relevance:
            break
        if named and not named & set(normal_words(item.candidate.text).split()):
            continue
        n = item.candidate.n
        same = next((i for i, c in enumerate(chosen) if _near_duplicate(item.candidate.text, c.text)), None)
        if same is None:
            chosen.append(item.candidate)
        elif n != chosen[same].n and n not in also.get(same, ()):
            also.setdefault(same, []).append(n)
    return chosen, also


# --- the answer ------------------------------------------------------------------------------


def extractive_answer(
    question: str,
    passages: Sequence[Passage],
    *,
    max_sentences: int = 3,
    scorer: SentenceScorer | None = None,
    conflicts: Sequence[ConflictLike] = (),
    excluded: Mapping[int, Sequence[tuple[int, int]]] | None = None,
    max_scored: int = MAX_SCORED,
    stored: StoredScores | None = None,
) -> str:
    """Answer with the passages' own sentences, the single most relevant first, each cited.

    Relevance is the lexical overlap of the question's salient terms plus, when ``stored`` scores
    or a ``scorer`` are given, the embedding similarity (stored when every unit ranked has one,
    else the scorer's), with a small prior for the retriever's order. Further
    sentences are added only when nearly as relevant as the best and not repeating it (a repeat
    from another passage adds its citation to the unit it repeats). When no
    sentence shares anything with the question, the best passage's first sentences are quoted.
    A conflict whose subject the question or the quoted sentences name is said in words, with a
    citation for each side. ``excluded`` character ranges (per passage ``n``) are never quoted.
    """
    if max_sentences < 1:
        raise ValueError(f"max_sentences must be at least 1, got {max_sentences}")
    candidates = unique_candidates(candidate_sentences(passages, excluded=excluded))
    if not candidates:
        return f"{EXTRACTIVE_PREFIX}\n{NOTHING_TO_QUOTE}"

    scored = _score(question, candidates, scorer, max_scored, stored)
    if scored[0].relevance > 0:
        chosen, also = _select(question, scored, max_sentences)
    else:
        also = {}
        first = min(c.rank for c in candidates)
        chosen = [c for c in candidates if c.rank == first][: min(2, max_sentences)]

    notes = _conflict_sentences(question, chosen, passages, conflicts, excluded or {})
    blocks = [_cited(c, also.get(i, ())) for i, c in enumerate(chosen)]
    kinds = [c.kind for c in chosen]
    blocks[1:1] = notes
    kinds[1:1] = [KIND_SENTENCE] * len(notes)
    return f"{EXTRACTIVE_PREFIX}\n{_layout(blocks, kinds)}"


def _cited(candidate: Candidate, also: Sequence[int] = ()) -> str:
    """The unit with its citations before the closing punctuation: "... per month [1]." (and
    "[1][3]" when passage 3 says the same)."""
    text = candidate.text
    cites = "".join(f"[{n}]" for n in (candidate.n, *also))
    closing = re.search(r"[.!?:][\"'”’)\]]*$", text)
    if closing:
        return f"{text[: closing.start()].rstrip()} {cites}{closing.group()}"
    return f"{text} {cites}"


def _layout(blocks: Sequence[str], kinds: Sequence[str]) -> str:
    """Short paragraphs; a compact list only when every part is a list item or a table row."""
    if len(blocks) > 1 and all(kind in (KIND_ITEM, KIND_ROW) for kind in kinds):
        return "\n".join(f"- {block}" for block in blocks)
    return "\n\n".join(blocks)


def _conflict_sentences(
    question: str,
    chosen: Sequence[Candidate],
    passages: Sequence[Passage],
    conflicts: Sequence[ConflictLike],
    excluded: Mapping[int, Sequence[tuple[int, int]]],
) -> list[str]:
    """One sentence per relevant conflict, naming each source's value with its citation."""
    asked = f"{question} {' '.join(c.text for c in chosen)}"
    chosen_ns = [c.n for c in chosen]
    sentences = []
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
            sentences.append(f"The sources disagree on {_display(conflict.subject, question)}: {listed}.")
    return sentences


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
