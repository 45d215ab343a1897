"""Checks of one assessment question against the passages it cites (pure).

- ``key_supported``: the key (MCQ) or every quoted sentence of the model answer is in a cited passage;
- ``no_distractor_supported``: no distractor is in the cited passage;
- ``well_formed``: an MCQ has four distinct options and its key among them; a short or long stem is
  answerable without options (it names none, has no blank, and asks something);
- ``bloom_form``: the question has a form of its Bloom level (``BLOOM_FORMS``: a recall is
  labelled remember, a scenario apply...), and a stem with a blank is a remember question;
- ``one_shape``: an MCQ's four options share one shape (kind, unit, format, capitalisation,
  lengths within 3x), so that none gives itself away;
- ``not_duplicate``: no question already in the paper (any position) has the same normalised stem,
  the same key from the same sentence, a quoted sentence in common, or a stem whose embedding is
  within ``NEAR_DUPLICATE_COSINE`` of its own;
- ``no_marked_text``: no stem, option, answer or quote repeats text that ingest marked in a passage
  as planted instructions (such a question is dropped after its second try, its text withheld).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_common.text.injection import strip_spans, withhold_planted_headings
from rag_common.text.quotable import candidate_sentences
from rag_common.text.term_shape import shape_mismatch
from rag_common.text.words import normal_words
from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import BLOOM_FORMS, Question, Validation

# Two stems whose MiniLM cosine is above this ask the same thing (docs/ASSESSMENTS.md shows the
# cosines measured on the evaluation papers).
NEAR_DUPLICATE_COSINE = 0.90
_OPTION_WORDS = re.compile(r"\b(which of the following|the options?|above|below|choose|select one)\b", re.IGNORECASE)


def passage_words(passage: Passage) -> str:
    """The passage as words, raw and as its cleaned quotable units (markup and links removed)."""
    units = " | ".join(normal_words(c.text) for c in candidate_sentences([passage]))
    return f" {normal_words(passage.text)} | {units} "


def holds(passage: Passage, text: str) -> bool:
    words = normal_words(text)
    return bool(words) and f" {words} " in passage_words(passage)


_SYMBOL = re.compile(r"[$%€£]")


def holds_term(passage: Passage, term: str) -> bool:
    """Whether the passage holds a term: a value with a symbol ($12, 5%) as written (spaces aside),
    so "$30" is not found in "30 days"; any other term by its words."""
    if _SYMBOL.search(term):
        flat = " ".join(term.split()).lower()
        return flat in " ".join(passage.text.split()).lower() or flat.replace(" ", "") in passage.text.lower()
    return holds(passage, term)


def cited_passages(question: Question, passages: Sequence[Passage]) -> list[Passage]:
    keys = {(c.source, c.chunk_index) for c in question.citations}
    return [p for p in passages if (p.source, p.chunk_index) in keys]


def key_supported(question: Question, passages: Sequence[Passage]) -> bool:
    cited = cited_passages(question, passages)
    if not cited or not question.citations:
        return False
    if question.kind == "mcq":
        quote = question.citations[0].quote
        return any(holds_term(p, question.answer) for p in cited) and (not quote or any(holds(p, quote) for p in cited))
    return all(any(holds(p, c.quote) for p in cited) for c in question.citations if c.quote) and any(
        c.quote for c in question.citations
    )


def supported_distractors(question: Question, passages: Sequence[Passage]) -> list[str]:
    """The distractors the cited passage holds (a wrong option the material states as the answer)."""
    if question.kind != "mcq":
        return []
    cited = cited_passages(question, passages)
    return [
        o for i, o in enumerate(question.options) if i != question.answer_index and any(holds_term(p, o) for p in cited)
    ]


def well_formed(question: Question) -> str | None:
    """Why the question is malformed, or None."""
    if question.kind == "mcq":
        options = [normal_words(o) for o in question.options]
        if len(options) != 4 or len(set(options)) != 4:
            return "an MCQ needs four distinct options"
        if question.answer_index is None or not 0 <= question.answer_index < 4:
            return "the key is not among the options"
        if question.options[question.answer_index] != question.answer:
            return "the key is not the option marked correct"
        return None
    if _OPTION_WORDS.search(question.stem) or "___" in question.stem:
        return "the stem needs options to be answered"
    if len(question.stem.split()) < 5:
        return "the stem is too short to ask anything"
    return None


def bloom_form(question: Question) -> bool:
    """Whether the question's form is one of its level's (a model's question is taken at its word),
    and a blank appears only in a remember question."""
    if "___" in question.stem and question.bloom != "remember":
        return False
    return question.rule == "model" or question.rule in BLOOM_FORMS[question.bloom]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


def normal_stem(stem: str) -> str:
    """A stem as a key for "the same question": its words, lower case, blanks and punctuation left out."""
    return normal_words(stem.replace("_", " "))


def _same_sentence(a: set[str], b: set[str]) -> bool:
    """Whether two sets of quoted sentences share one (a quote cut shorter counts: one holds the other)."""
    return any(x == y or (x and y and (f" {x} " in f" {y} " or f" {y} " in f" {x} ")) for x in a for y in b)


def duplicate_of(
    question: Question,
    vector: Sequence[float] | None,
    accepted: Sequence[tuple[Question, Sequence[float] | None]],
    threshold: float = NEAR_DUPLICATE_COSINE,
) -> str | None:
    """Why the question repeats one already in the paper: the same stem once normalised, the same
    key drawn from the same sentence, a shared quoted sentence, or a stem whose embedding is within
    ``threshold`` of another's. Questions are named by their number in the paper (index + 1)."""
    stem = normal_stem(question.stem)
    quotes = {normal_words(c.quote) for c in question.citations if c.quote}
    key = normal_words(question.answer) if question.kind == "mcq" else ""
    for other, other_vector in accepted:
        number = other.index + 1
        if stem and stem == normal_stem(other.stem):
            return f"asks the same as question {number} (the same stem)"
        other_quotes = {normal_words(c.quote) for c in other.citations if c.quote}
        if key and key == normal_words(other.answer) and _same_sentence(quotes, other_quotes):
            return f"asks for the same key as question {number} from the same sentence"
        if quotes & other_quotes:
            return f"rests on the same sentence as question {number}"
        if vector is not None and other_vector is not None:
            similarity = cosine(vector, other_vector)
            if similarity > threshold:
                return f"stem is a near-duplicate of question {number} (cosine {similarity:.2f})"
    return None


# A question repeats a marked span when it shares this many words in a row with it (or the whole
# span, when shorter): enough to carry an instruction, more than a plan's name or a price.
MARKED_RUN_WORDS = 5
WITHHELD = "[withheld: it repeated text planted in the source as instructions]"


def marked_text(question: Question, passages: Sequence[Passage]) -> Passage | None:
    """The passage whose marked (planted) text the question repeats, if any.

    A stem, answer or quote repeats a span when it shares ``MARKED_RUN_WORDS`` words in a row with
    it; an option (a term) when its words stand in the span and nowhere else in the passage.
    """
    texts = [question.stem, question.answer, *(c.quote for c in question.citations)]
    for passage in passages:
        if _repeats_planted_heading([*texts, *(c.section for c in question.citations)], passage):
            return passage
        if not passage.injection_spans:
            continue
        elsewhere = f" {normal_words(strip_spans(passage.text, passage.injection_spans))} "
        for start, end in passage.injection_spans:
            span = normal_words(passage.text[start:end]).split()
            run = min(MARKED_RUN_WORDS, len(span))
            if run and any(_shares_run(normal_words(text).split(), span, run) for text in texts):
                return passage
            spoken = f" {' '.join(span)} "
            for option in question.options:
                words = normal_words(option)
                if words and f" {words} " in spoken and f" {words} " not in elsewhere:
                    return passage
    return None


def _repeats_planted_heading(texts: Sequence[str], passage: Passage) -> bool:
    """Whether a text repeats a heading of the passage's section path that reads as a planted
    instruction (a heading is not chunk text: ingest's spans do not cover it)."""
    kept = set(withhold_planted_headings(passage.section).split(" > "))
    for heading in passage.section.split(" > "):
        words = normal_words(heading).split()
        run = min(MARKED_RUN_WORDS, len(words))
        if heading in kept or not run:
            continue
        if any(_shares_run(normal_words(text).split(), words, run) for text in texts):
            return True
    return False


def _shares_run(words: list[str], span: list[str], run: int) -> bool:
    grams = {tuple(span[i : i + run]) for i in range(len(span) - run + 1)}
    return any(tuple(words[i : i + run]) in grams for i in range(len(words) - run + 1))


def withheld(question: Question) -> Question:
    """A question that repeated planted text, as a reader may see it in the dropped list: its
    stem, options, answer and quotes replaced by a notice; where it came from and why it failed kept."""
    return question.model_copy(
        update={
            "stem": WITHHELD,
            "options": [WITHHELD for _ in question.options],
            "answer": WITHHELD,
            "citations": [
                c.model_copy(update={"quote": WITHHELD, "section": withhold_planted_headings(c.section)})
                for c in question.citations
            ],
        }
    )


def validate(
    question: Question,
    passages: Sequence[Passage],
    vector: Sequence[float] | None,
    accepted: Sequence[tuple[Question, Sequence[float] | None]],
    threshold: float = NEAR_DUPLICATE_COSINE,
) -> Validation:
    """Every check of one question, and why each failed one failed."""
    reasons: list[str] = []
    checks: dict[str, bool] = {}
    checks["key_supported"] = key_supported(question, passages)
    if not checks["key_supported"]:
        reasons.append("the key is not supported by the cited passage")
    supported = supported_distractors(question, passages)
    checks["no_distractor_supported"] = not supported
    if supported:
        reasons.append(f"distractor(s) supported by the passage: {supported}")
    malformed = well_formed(question)
    checks["well_formed"] = malformed is None
    if malformed:
        reasons.append(malformed)
    checks["bloom_form"] = bloom_form(question)
    if not checks["bloom_form"]:
        reasons.append(f"the question's form ({question.rule or 'none'}) is not a '{question.bloom}' form")
    if question.kind == "mcq":
        mismatch = shape_mismatch(question.options)
        checks["one_shape"] = mismatch is None
        if mismatch:
            reasons.append(f"the options are not of one shape: {mismatch}")
    duplicate = duplicate_of(question, vector, accepted, threshold)
    checks["not_duplicate"] = duplicate is None
    if duplicate:
        reasons.append(duplicate)
    planted = marked_text(question, passages)
    checks["no_marked_text"] = planted is None
    if planted is not None:
        section = withhold_planted_headings(planted.section)
        where = f"{planted.source} ({section})" if section else planted.source
        reasons.append(f"it repeats text that ingest marked as planted instructions in {where}")
    return Validation(valid=all(checks.values()), checks=checks, reasons=reasons)
