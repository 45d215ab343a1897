"""Per-answer quality checks (L1): citations, refusals, disagreement, grounding, confidence, injection.

These are plain functions over typed values so the evaluator's handler stays a thin wrapper and
every rule can be unit-tested without a broker. Each check is deliberately simple and
explainable: a raised flag carries details that tell a user *why* it was raised.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag_common.text.citations import CITATION, cited_numbers
from rag_common.text.conflicts import Conflict, find_conflicts, names_subject
from rag_common.text.injection import strip_spans
from rag_common.text.lines import LIST_MARKER
from rag_common.text.sentences import split_sentences
from rag_common.text.words import STOP_WORDS, stem, tokens
from rag_common.wire.messages import FAILING_FLAGS, Evaluation, Flag, Passage, QueryDrafted

# A sentence is grounded when this share of its content words is in the passages it cites...
UNGROUNDED_BELOW = 0.5
# ...and only marginally so below this share, which makes the whole answer low-confidence.
MARGINAL_BELOW = 0.67


def clean_text(passage: Passage) -> str:
    """A passage's text without its planted instructions (marked at ingest): evidence of nothing."""
    return strip_spans(passage.text, passage.injection_spans) if passage.injection_spans else passage.text


# --- citations ---------------------------------------------------------------------------------

# One parser shared with the generator (rag_common.text.citations): both agree on what a citation is.
citation_numbers = cited_numbers


def _citation_verdict(cited: Iterable[int], valid: Iterable[int]) -> tuple[bool, dict[str, object]]:
    """Judge cited numbers against the passage numbers that exist.

    Unusable citations: one points at no passage, or nothing is cited at all (an uncited answer
    cannot be checked against its sources, so it counts as invalid too).
    """
    numbers, known = list(cited), set(valid)
    invalid = sorted({n for n in numbers if n not in known})
    missing = not numbers
    return bool(invalid) or missing, {"invalid": invalid, "missing": missing}


# --- grounding ---------------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
# Words that frame an answer rather than state a fact: they need no support in the passages.
_FRAMING = frozenset(
    "document documents source sources passage passages say says said state states stated according mention "
    "mentions mentioned disagree disagrees while however note answer information based following listed "
    "extractive quote quoted yes".split()
)
_UNCHECKED = STOP_WORDS | _FRAMING

# An answer may say "costs" where the table says "Price": one stem for the support-desk synonyms
# (Snowball stems: "charges" and "charging" are "charg", "pricing" is "price").
_SYNONYMS = {"cost": "price", "fee": "price", "charg": "price", "pay": "price"}


def _term(word: str) -> str:
    stemmed = stem(word)
    return _SYNONYMS.get(stemmed, stemmed)


def _content_terms(text: str) -> set[str]:
    """The stems of a text's words that state something: stop and framing words and numbers out."""
    return {_term(w) for w in set(tokens(text)) if w not in _UNCHECKED and not w[0].isdigit() and len(w) > 1}


def _numbers(text: str) -> set[str]:
    return {m.group().replace(",", "") for m in _NUMBER.finditer(text)}


def answer_sentences(answer: str) -> list[str]:
    """The statements of an answer: sentences and list items, without framing lines ("From the documents:")."""
    sentences = []
    for part in (sentence for line in answer.split("\n") for sentence in split_sentences(line)):
        text = LIST_MARKER.sub("", part).strip()
        if not text or (text.endswith(":") and not CITATION.search(text) and len(text.split()) <= 8):
            continue
        sentences.append(text)
    return sentences


@dataclass(frozen=True, slots=True)
class Support:
    """How well the passages a sentence cites back it: share of its words, numbers they lack."""

    sentence: str
    share: float
    missing_numbers: tuple[str, ...]

    @property
    def value(self) -> float:
        return 0.0 if self.missing_numbers else self.share


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one passage can back, read once per answer: its content words and its numbers."""

    terms: frozenset[str]
    numbers: frozenset[str]

    @classmethod
    def of(cls, passage: Passage) -> Evidence:
        """From the passage's source, section and text without its planted instructions."""
        text = f"{passage.source} {passage.section} {clean_text(passage)}"
        return cls(frozenset(_content_terms(text)), frozenset(_numbers(text)))


def sentence_support(sentence: str, evidence: Mapping[int, Evidence]) -> Support:
    """Lexical support of one sentence by the passages it cites (all passages when it cites none).

    ``evidence`` is per passage number; planted instructions are left out of it, so a sentence
    only they back is not grounded.
    """
    cited = [evidence[n] for n in cited_numbers(sentence) if n in evidence] or list(evidence.values())
    known = frozenset().union(*(e.terms for e in cited))
    stated = frozenset().union(*(e.numbers for e in cited))
    claim = CITATION.sub(" ", sentence)
    terms = _content_terms(claim)
    share = len(terms & known) / len(terms) if terms else 1.0
    missing = tuple(sorted(_numbers(claim) - stated))
    return Support(sentence=sentence, share=round(share, 3), missing_numbers=missing)


def weakest_support(answer: str, passages: Sequence[Passage]) -> Support | None:
    """The least supported sentence of an answer: it decides whether the answer is grounded."""
    evidence = {p.n: Evidence.of(p) for p in passages}
    supports = [sentence_support(s, evidence) for s in answer_sentences(answer)]
    return min(supports, key=lambda s: s.value, default=None)


# --- terminology -------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _term_pattern(term: str) -> re.Pattern[str]:
    """A whole-word, case-insensitive match of a term; its spaces match any run of whitespace."""
    words = (re.escape(w) for w in term.split())
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def rival_terms(answer: str, terminology: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Each rival term the answer uses, with the preferred term the collection's profile names for
    it: a deterministic lookup (no model), so a raised ``terminology`` flag is auditable."""
    found = []
    for preferred, rivals in terminology.items():
        for rival in rivals:
            match = _term_pattern(rival).search(answer)
            if match:
                found.append({"rival": rival, "preferred": preferred, "found": match.group(0)})
    return found


# --- all flags for one answer ------------------------------------------------------------------


def evaluate(
    answer: str,
    passages: Sequence[Passage],
    *,
    refused: bool,
    cited: Sequence[int] | None = None,
    question: str | None = None,
    suspicions: Sequence[str] = (),
    low_confidence: str | None = None,
    refusal_reason: str | None = None,
    terminology: Mapping[str, Sequence[str]] | None = None,
    preface: str = "",
    model_answer_rejected: str | None = None,
) -> Evaluation:
    """Every flag for one answer, with details for the raised ones.

    A refusal cites nothing and states no facts, so citations, conflicts and grounding are only
    judged on real answers. `cited` lets the generator pass the numbers it already parsed. With
    `question`, a conflict counts only when its subject is named in the question or the answer:
    two prices of the Pro plan in the passages do not make an answer about storage doubtful.
    Planted instructions never count as a source's statement. A passage holding one raises
    `injection_suspected` when it was retrieved, quoted or not: the user learns that the documents
    found hold planted text; so does a stage's suspicion (`suspicions`). `low_confidence` is the
    retriever's reason when the passages only just passed the collection's threshold;
    `refusal_reason` the generator's or the router's reason for a refusal, the `refused` flag's detail.
    `terminology` (the collection profile's preferred term -> rival terms) raises `terminology` when
    the answer uses a rival term.
    `preface` is canned text the answer opens with (the refusal of a question's dropped attack): it
    is no statement to check. `model_answer_rejected` is why a model's answer was withheld.
    """
    flags: dict[str, bool] = {flag: False for flag in Flag}
    details: dict[str, object] = {}
    flags[Flag.REFUSED] = refused
    if preface and answer.startswith(preface):
        answer = answer[len(preface) :]
    if model_answer_rejected:
        flags[Flag.MODEL_ANSWER_REJECTED] = True
        details[Flag.MODEL_ANSWER_REJECTED] = model_answer_rejected

    planted = [p for p in passages if p.injection_spans]
    if suspicions or planted:
        flags[Flag.INJECTION_SUSPECTED] = True
        details[Flag.INJECTION_SUSPECTED] = {
            "suspicions": list(suspicions),
            "passages": [
                {"n": p.n, "source": p.source, "section": p.section, "page": p.page, "withheld": len(p.injection_spans)}
                for p in planted
            ],
        }

    if not refused:
        numbers = citation_numbers(answer) if cited is None else cited
        invalid, why = _citation_verdict(numbers, (p.n for p in passages))
        if invalid:
            flags[Flag.CITATION_INVALID], details[Flag.CITATION_INVALID] = True, why
        conflicts = relevant_conflicts(passages, question, answer)
        if conflicts:
            flags[Flag.CONFLICTING_SOURCES] = True
            details[Flag.CONFLICTING_SOURCES] = [{"subject": c.subject, "values": c.values} for c in conflicts]
        weakest = weakest_support(answer, passages)
        if weakest is not None and weakest.value < UNGROUNDED_BELOW:
            flags[Flag.UNGROUNDED] = True
            details[Flag.UNGROUNDED] = {
                "sentence": weakest.sentence,
                "support": weakest.share,
                "missing_numbers": list(weakest.missing_numbers),
            }
        reasons = [low_confidence] if low_confidence else []
        if weakest is not None and UNGROUNDED_BELOW <= weakest.value < MARGINAL_BELOW:
            reasons.append(f"the weakest sentence is only marginally supported ({weakest.share:.2f} of its words)")
        if reasons:
            flags[Flag.LOW_CONFIDENCE], details[Flag.LOW_CONFIDENCE] = True, "; ".join(reasons)
    if refused and refusal_reason:
        details[Flag.REFUSED] = refusal_reason
    rivals = rival_terms(answer, terminology) if terminology else []
    if rivals:
        flags[Flag.TERMINOLOGY], details[Flag.TERMINOLOGY] = True, rivals
    return Evaluation(flags=flags, details=details, flagged=any(flags[n] for n in FAILING_FLAGS))


def assess(drafted: QueryDrafted, terminology: Mapping[str, Sequence[str]] | None = None) -> Evaluation:
    """Flags for one drafted answer. A canned greeting is not a document answer: it needs no citation.

    ``terminology``: the collection profile's preferred term -> rival terms."""
    if drafted.route.tier == "greeting" and not drafted.suspicions:
        return Evaluation(flags={flag: False for flag in Flag}, details={}, flagged=False)
    draft, retrieval = drafted.draft, drafted.retrieval
    return evaluate(
        draft.answer,
        retrieval.passages,
        refused=draft.refused,
        question=retrieval.rewritten_question or drafted.query.question,
        suspicions=drafted.suspicions,
        low_confidence=retrieval.low_confidence,
        refusal_reason=draft.refusal_reason,
        terminology=terminology,
        preface=draft.preface,
        model_answer_rejected=draft.model_answer_rejected,
    )


def relevant_conflicts(passages: Sequence[Passage], question: str | None, answer: str) -> list[Conflict]:
    """Conflicts between the passages' own statements (planted text excluded) that the exchange is about."""
    conflicts = find_conflicts([p.model_copy(update={"text": clean_text(p)}) for p in passages])
    if question is None:
        return conflicts
    asked = f"{question} {answer}"
    return [c for c in conflicts if names_subject(asked, c.subject)]
