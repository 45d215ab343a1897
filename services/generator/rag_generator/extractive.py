"""The extractive answer: the documents' own words that answer what was asked, cited (pure).

Without a language model the answer can only quote, so quality comes from what is quoted and
how much of it:

- **What is asked** (``rag_generator.asking``): the answer type (a price, a value, steps, a
  reason...) and the words the question is about.
- **What can be quoted** (``rag_common.text.quotable``): whole sentences, list items, table rows
  (rendered as readable text), and lines of code or configuration (quoted verbatim in a code
  span) - never a heading, half a PDF line or code flattened into a line of prose.
- **How relevant** each unit is (``rag_generator.relevance``): focus words, the answer type,
  embeddings.
- **Choosing** (here): units that hold the expected type and the focus words win; a unit that opens
  with "It"/"This"/"They" is quoted only with the sentence it refers to; a fact is quoted once,
  and so is a sentence another unit holds word for word (``rag_generator.repeats``); a length
  budget per answer type keeps a value short and steps whole.
- **Conflicts** open the answer (``rag_generator.notice``): a disagreement between sources is
  said first, in words.
- **Nothing that answers** (``rag_generator.refusal``): when no unit holds the question's focus
  (or a name it asks about),
  the reply says so (``ExtractiveReply.answered``) and the generator refuses instead of quoting
  whatever came closest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_common.text.quotable import (
    KIND_CODE,
    KIND_ITEM,
    KIND_ROW,
    KIND_SENTENCE,
    Candidate,
    candidate_sentences,
    unique_candidates,
)
from rag_common.text.words import names
from rag_common.wire.messages import Passage
from rag_generator.asking import AnswerType, Asked, analyse, words_of
from rag_generator.comparing import side_by_side
from rag_generator.layout import cite, following, render, with_blocks
from rag_generator.notice import ConflictLike, conflict_sentences, restates
from rag_generator.refusal import acronym, slot_unfilled, why_unanswered
from rag_generator.relevance import (
    MAX_SCORED,
    Scored,
    SentenceScorer,
    StoredScores,
    holds_type,
    score_units,
    terms,
)
from rag_generator.repeats import GLUED_STOP, add_unless_repeated, as_read, contains, same_fact
from rag_generator.slots import Slot, SlotRule, asked_slot, fills

NOTHING_TO_QUOTE = "The documents found hold no complete sentence to quote for this question."

# --- selection knobs -------------------------------------------------------------------------
# A further unit must be at least this relevant relative to the best one: a support answer is
# better short than padded with loosely related bullets.
RELATIVE_THRESHOLD = 0.7
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

_PRONOUN_START = re.compile(
    # "So ...", "Therefore ...": a consequence is read with the sentence that gives its reason.
    r"^(it|this|that|they|these|those|he|she|its|their|such|so|thus|therefore|hence|consequently)\b"
    r"(?!\s+(?:is|are)\s+(?:why|how))",
    re.I,
)
_REPORTED_QUESTION = re.compile(r"\b(asked|wondered|wonders|wants to know)\s+(whether|if|how|what|why|when)\b", re.I)
_DETERMINER_NOUN = re.compile(r"^(this|that|these|those)\s+[a-z]+\s+(is|are|was|were|has|have|can|will)\b", re.I)


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


def _opens_with_pronoun(text: str) -> bool:
    """ "It is kept for 90 days": the subject is in the sentence before. "This plan is..." names it."""
    return bool(_PRONOUN_START.match(text)) and not _DETERMINER_NOUN.match(text)


# --- choosing --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Choice:
    units: list[Candidate]  # in the order they are read
    also: dict[int, list[int]]  # index in units -> further passages saying the same


def _select(asked: Asked, scored: Sequence[Scored], candidates: Sequence[Candidate], max_units: int) -> _Choice:
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
            chosen = add_unless_repeated(chosen, following)
    # A procedure told in sentences goes on after its first step ("Go to Settings > Export. You
    # can export all projects as CSV or JSON."): the next sentence under the same heading follows.
    elif asked.answer_type is AnswerType.STEPS and best.candidate.kind == KIND_SENTENCE:
        following = _next_in_passage(best.candidate, candidates)
        if following is not None and following.context == best.candidate.context:
            chosen = add_unless_repeated(chosen, following)
    words = sum(len(c.text.split()) for c in chosen)
    also: dict[int, list[int]] = {}
    names = {n.lower() for n in asked.names if not acronym(n)}
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
        read = as_read(candidate, asked)
        same = next((i for i, c in enumerate(chosen) if same_fact(read, as_read(c, asked))), None)
        if same is not None:
            # The same sentence with more glued to it (a card's text run into the next card's) is
            # quoted as the shorter one, once.
            if contains(as_read(chosen[same], asked), read) and GLUED_STOP.search(chosen[same].text):
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


def _with_what_follows(choice: _Choice, candidates: Sequence[Candidate], budget: int, asked: Asked) -> _Choice:
    """The best unit's passage read on from it while the answer is short: the reason or the step
    asked for often sits in the sentence after the one that matches the question best ("...
    slowly evict clients. This avoids a thundering herd ..."). Not for a value, which is one
    unit worth more; and when the question names something, only while the units name it too ("The
    Business plan costs $24" is not more of an answer about the Pro plan)."""
    if not choice.units or choice.units[0].kind in (KIND_CODE, KIND_ROW):
        return choice  # a line of configuration or a table row is the value itself
    named = {n.lower() for n in asked.names if not acronym(n)}
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
    others = {n.lower() for n in names(text) if not acronym(n)} - named
    return bool(others) and not named & words_of(text)


def _with_command(choice: _Choice, scored: Sequence[Scored], candidates: Sequence[Candidate]) -> _Choice:
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


def _slot_first(slot: SlotRule | None, scored: Sequence[Scored]) -> list[Scored]:
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
    promoted = Scored(lead.candidate, best, scored[0].score, lead.lexical)
    return [promoted, *(s for s in scored if s is not lead)]


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
    every = candidates
    if asked.answer_type not in (AnswerType.VALUE, AnswerType.STEPS):
        # Code is quoted for what it holds (a port, a command), not as an answer to "why" or "what is".
        candidates = [c for c in candidates if c.kind != KIND_CODE] or candidates
    if not candidates:
        return ExtractiveReply(NOTHING_TO_QUOTE, answered=False, reason="no complete sentence to quote")
    scored = score_units(asked, candidates, scorer, max_scored, stored)
    slot = asked_slot(question)
    unanswered = why_unanswered(asked, candidates, passages) or slot_unfilled(slot, question, scored)
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
        every=every,
    )
    also = {units.index(u): ns for i, ns in choice.also.items() if (u := choice.units[i]) in units}
    titled = {i: f"{u.title}: {u.text}" for i, u in enumerate(units) if u.title and u.kind != KIND_ROW}
    stated = conflict_sentences(question, units, passages, conflicts, excluded or {})
    notes = [sentence for sentence, _ in stated]
    # The notice names each source's value: a unit that only repeats one of them says it twice.
    kept = [i for i, u in enumerate(units) if not any(restates(u, conflict) for _, conflict in stated)]
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
