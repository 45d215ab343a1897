"""Assessment questions written by rules a teacher would accept, from the retrieved passages (pure).

- **MCQ**: a sentence of the passage with one term blanked (a value, a name, or a defined term); the
  distractors are terms of the same type found elsewhere in the collection (other values with the
  same unit, other names, other defined terms), never one the cited passage contains and never a
  paraphrase of the key (no shared word, no containment, no equal number).
- **short**: a defining sentence asks to define its term; a "why/how" sentence (because, so that, by
  ...) asks to explain its reason or means; otherwise a heading asks to state what it says. The
  model answer is quoted from the passage.
- **long**: a heading of the unit, with a Bloom verb of the asked level; the model answer is the
  passage's key sentences, quoted.

Every stem opens with a verb of its Bloom level (``BLOOM_VERBS``), which the evaluator checks.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_common.text.quotable import Candidate, candidate_sentences
from rag_common.text.sentences import split_sentences
from rag_common.text.words import STOP_WORDS, normal_words
from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import BloomLevel, Citation, Question, QuestionSpec

_UNITS = (
    "days?|hours?|minutes?|seconds?|weeks?|months?|years?|users?|seats?|members?|requests?|tokens?|"
    "calls?|messages?|files?|documents?|pages?|characters?|words?|times?|GB|MB|KB|TB|ms|employees?|visits?|"
    "dollars?|credits?|points?|percent|people|steps?|items?|examples?|levels?|models?|languages?"
)
_VALUE = re.compile(
    rf"(?<![\w.$])(?:\$\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:million|billion|[kKmM]))?|\d[\d,]*(?:\.\d+)?\s?%|"
    rf"\d[\d,]*(?:\.\d+)?(?:\s?-\s?|\s)(?:{_UNITS})\b)"
)
_NAME = re.compile(r"(?<![\w'’])((?:[A-Z][A-Za-z0-9+&.-]*[A-Za-z0-9+])(?:\s+(?:[A-Z][A-Za-z0-9+&.-]*|\d[\w.]*)){1,4})")
_PROPER = re.compile(r"(?<=[a-z,;(] )([A-Z][a-z]+[A-Za-z0-9]*|[A-Z]{2,6}[a-z]?)(?![\w'’-])")
_DEFINITION = re.compile(
    r"^(?:An?\s+|The\s+)?(?P<term>[A-Za-z][\w\s()/-]{1,60}?)\s+(?:is|are|refers to|means)\s+"
    r"(?:an?|the|one)\s+(?P<rest>.{12,})$"
)
_REASON = re.compile(r"\b(because|so that|in order to|to ensure|to avoid|to prevent|since)\b", re.IGNORECASE)
_MEANS = re.compile(
    r"\b(by (?:using|adding|setting|providing|asking|giving|breaking|including|making)|using|through)\b"
)
# Common words that may open a clause and name nothing: a capitalised one is no name, and a clause
# that opens with one is lower-cased inside a question. The stop words, pronouns and counting words.
_COMMON_OPENERS = STOP_WORDS | frozenset("but every first he her his one she three two".split())
_GENERIC_NAMES = frozenset({"the", "this", "these", "for example", "note", "however", "also", "see"})
BLANK = "_____"
MIN_SENTENCE_WORDS, MAX_SENTENCE_WORDS = 7, 60


@dataclass(frozen=True, slots=True)
class Term:
    text: str
    type: str  # "money", "percent", "quantity:<unit>", "name", "term"


def _unit_word(value: str) -> str:
    words = re.findall(r"[A-Za-z]+", value)
    return words[-1].lower().rstrip("s") if words else ""


def value_type(value: str) -> str:
    if "$" in value:
        return "money"
    if "%" in value:
        return "percent"
    return f"quantity:{_unit_word(value)}"


def _number(value: str) -> float | None:
    found = re.search(r"\d[\d,]*(?:\.\d+)?", value)
    return float(found.group(0).replace(",", "")) if found else None


def terms_of(sentence: str) -> list[Term]:
    """The blankable terms of a sentence: values first, then names, then a defined term."""
    found: list[Term] = [Term(m.group(0).strip(), value_type(m.group(0))) for m in _VALUE.finditer(sentence)]
    for m in _NAME.finditer(sentence):
        text = m.group(1).rstrip(".")
        if m.start() == 0 and len(text.split()) < 2:
            continue
        if text.lower() in _GENERIC_NAMES or text.split()[0].lower() in _COMMON_OPENERS:
            continue
        found.append(Term(text, "name"))
    # A capitalised word inside a sentence (not after a full stop or a colon) is a proper name too:
    # a product, a language, a company.
    named = {t.text for t in found}
    for m in _PROPER.finditer(sentence):
        word = m.group(1)
        if m.start() > 0 and word.lower() not in _COMMON_OPENERS and not any(word in n for n in named):
            found.append(Term(word, "name"))
    definition = _DEFINITION.match(sentence)
    if definition and _nameable(definition.group("term")):
        found.append(Term(definition.group("term").strip(), "term"))
    return found


def _nameable(term: str) -> bool:
    """A defined term worth asking about: 1-5 words, not opening with a pronoun or article ("This is a ...")."""
    words = term.split()
    return 1 <= len(words) <= 5 and words[0].lower() not in _COMMON_OPENERS


def is_paraphrase(a: str, b: str) -> bool:
    """Whether two terms say the same: equal words, one inside the other, the same number, or
    half their words shared."""
    na, nb = normal_words(a), normal_words(b)
    if not na or not nb or na == nb or na in nb or nb in na:
        return True
    va, vb = _number(a), _number(b)
    if va is not None and vb is not None and va == vb:
        return True
    wa, wb = set(na.split()), set(nb.split())
    return len(wa & wb) * 2 >= min(len(wa), len(wb)) and bool(wa & wb) and va is None


def term_pool(passages: Sequence[Passage]) -> dict[str, list[str]]:
    """Every term of the foils by type, each once (first spelling kept)."""
    pool: dict[str, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    for candidate in unmarked_candidates(passages):
        for term in terms_of(candidate.text):
            key = (term.type, normal_words(term.text))
            if key not in seen:
                seen.add(key)
                pool.setdefault(term.type, []).append(term.text)
    return pool


def unmarked_candidates(passages: Sequence[Passage]) -> list[Candidate]:
    """The passages' quotable units, less any touching text that ingest marked as planted
    instructions: no stem, key, distractor or model answer is built from such text.

    Each passage is read alone, so foils numbered like an item's passages never lend it their marks.
    """
    return [
        candidate
        for passage in passages
        for candidate in candidate_sentences(
            [passage], excluded={passage.n: passage.injection_spans} if passage.injection_spans else None
        )
    ]


def contained(term: str, passages: Sequence[Passage]) -> bool:
    """Whether the passages' text holds the term (words compared, markup ignored)."""
    words = f" {normal_words(term)} "
    return any(words in f" {normal_words(p.text)} " for p in passages)


def pick_distractors(
    key: Term, pool: dict[str, list[str]], cited: Sequence[Passage], rng: random.Random, difficulty: str, n: int = 3
) -> list[str]:
    """``n`` terms of the key's type that the cited passages do not hold and that do not paraphrase
    the key or each other; harder papers take the ones closest to the key (in size or spelling)."""
    options = [t for t in pool.get(key.type, []) if not is_paraphrase(t, key.text) and not contained(t, cited)]
    rng.shuffle(options)
    if difficulty == "hard":
        target = _number(key.text)
        if target is not None:
            options.sort(key=lambda t: abs((_number(t) or 0) - target))
        else:
            options.sort(key=lambda t: abs(len(t) - len(key.text)))
    chosen: list[str] = []
    for option in options:
        if all(not is_paraphrase(option, other) for other in chosen):
            chosen.append(option)
        if len(chosen) == n:
            break
    return chosen


def _sentences(passages: Sequence[Passage], rows: bool = False) -> list[tuple[str, Passage]]:
    """The quotable sentences of the passages (and, with ``rows``, table rows and short items: what
    a short or long answer can quote when a passage has no sentence)."""
    by_n = {p.n: p for p in passages}
    out, extra = [], []
    for c in unmarked_candidates(passages):
        words = len(c.text.split())
        if c.kind == "row" or not MIN_SENTENCE_WORDS <= words <= MAX_SENTENCE_WORDS or c.text.endswith(":"):
            if rows and words >= 3:
                extra.append((c.text, by_n[c.n]))
            continue
        out.append((c.text, by_n[c.n]))
    return out or extra


def _cite(passage: Passage, quote: str) -> Citation:
    return Citation(
        source=passage.source, section=passage.section, page=passage.page, chunk_index=passage.chunk_index, quote=quote
    )


def _where(passage: Passage) -> str:
    name = passage.source.rsplit("/", 1)[-1]
    return f'"{passage.section}" ({name})' if passage.section else name


def _lower_first(text: str) -> str:
    """Lower-case a clause's first word when it is a common word (a name keeps its capital)."""
    first = text.split(" ", 1)[0]
    return text[0].lower() + text[1:] if first.lower() in _COMMON_OPENERS else text


_MCQ_LEAD: dict[BloomLevel, str] = {
    "remember": "Identify the {what} that completes this statement from {where}",
    "understand": "Interpret this statement from {where} and choose the {what} that completes it",
    "apply": "Determine which {what} applies in this statement from {where}",
}
_WHAT = {"money": "amount", "percent": "percentage", "name": "name", "term": "term"}


def write_mcq(
    spec: QuestionSpec, passages: Sequence[Passage], pool: dict[str, list[str]], rng: random.Random, avoid: set[str]
) -> Question | None:
    """A cloze MCQ: the first sentence with a term that has three same-type distractors."""
    for sentence, passage in _sentences(passages):
        if normal_words(sentence) in avoid:
            continue
        for term in terms_of(sentence):
            distractors = pick_distractors(term, pool, [passage], rng, spec.difficulty)
            if len(distractors) < 3 or sentence.count(term.text) != 1:
                continue
            what = _WHAT.get(term.type, "value")
            lead = _MCQ_LEAD.get(spec.bloom, _MCQ_LEAD["remember"]).format(what=what, where=_where(passage))
            stem = f'{lead}: "{sentence.replace(term.text, BLANK)}"'
            options = [term.text, *distractors]
            rng.shuffle(options)
            return Question(
                index=spec.index,
                kind="mcq",
                stem=stem,
                options=options,
                answer_index=options.index(term.text),
                answer=term.text,
                bloom=spec.bloom,
                difficulty=spec.difficulty,
                marks=spec.marks,
                unit=spec.unit,
                citations=[_cite(passage, sentence)],
                rule=f"cloze-{term.type.split(':')[0]}",
            )
    return None


def _reason_stem(sentence: str) -> tuple[str, str] | None:
    """ "X happens because Y" → ("why", "X happens"); "You do X by using Y" → ("how", "you do X")."""
    for pattern, word in ((_REASON, "why"), (_MEANS, "how")):
        match = pattern.search(sentence)
        if match and match.start() > 15:
            head = sentence[: match.start()].strip(" ,;:-")
            # A list item can hold several sentences: a clause that spans one break is no statement.
            if len(split_sentences(head)) > 1:
                continue
            if len(head.split()) >= 3 and not head.endswith(("and", "or", "to")):
                return word, _lower_first(head)
    return None


_SHORT: dict[BloomLevel, str] = {
    "remember": "State what {where} says about {topic}.",
    "understand": "Explain {how} {clause}, as {where} describes it.",
    "apply": "Use {where} to determine {how} {clause}.",
    "analyze": "Examine {how} {clause}, according to {where}.",
}
_LONG: dict[BloomLevel, str] = {
    "understand": "Describe {topic} as presented in {where}, explaining how its main points fit together.",
    "analyze": "Analyse {topic} as presented in {where}: break it into its main points and explain how they relate.",
    "evaluate": "Evaluate the approach to {topic} set out in {where}: justify when it fits, citing the material.",
    "create": "Design a short plan that puts {topic} from {where} into practice, citing the material for each step.",
}


def _topic(passage: Passage) -> str:
    """The passage's own heading (the last of its path), else its document's name."""
    return passage.section.rsplit(" > ", 1)[-1].strip() or passage.source.rsplit("/", 1)[-1]


def write_short(spec: QuestionSpec, passages: Sequence[Passage], avoid: set[str]) -> Question | None:
    """A definition, a why/how question, or what a heading says; the answer quoted."""
    sentences = [(s, p) for s, p in _sentences(passages, rows=True) if normal_words(s) not in avoid]
    for sentence, passage in sentences:
        definition = _DEFINITION.match(sentence)
        if spec.bloom == "remember" and definition and _nameable(definition.group("term")):
            term = definition.group("term").strip()
            stem = f"Define {term}, as {_where(passage)} uses the term."
            return _open(spec, stem, [sentence], passage, "definition")
    for sentence, passage in sentences:
        reason = _reason_stem(sentence)
        if reason and spec.bloom in _SHORT and spec.bloom != "remember":
            how, clause = reason
            stem = _SHORT[spec.bloom].format(how=how, clause=clause, where=_where(passage))
            return _open(spec, stem, [sentence], passage, f"{how}-sentence")
    if not sentences:
        return None
    sentence, passage = sentences[0]
    level = spec.bloom if spec.bloom == "remember" else "remember"
    topic = _topic(passage)
    if normal_words(topic) == normal_words(passage.section.rsplit(" > ", 1)[-1]):
        stem = f"State the main points that {_where(passage)} makes."
    else:
        stem = _SHORT["remember"].format(where=_where(passage), topic=_lower_first(topic))
    return _open(spec.model_copy(update={"bloom": level}), stem, [sentence], passage, "heading")


def write_long(
    spec: QuestionSpec, passages: Sequence[Passage], avoid: set[str], sentences_wanted: int
) -> Question | None:
    """A heading question with a Bloom verb; the model answer is the passage's leading sentences."""
    sentences = [(s, p) for s, p in _sentences(passages, rows=True) if normal_words(s) not in avoid]
    if not sentences:
        return None
    passage = sentences[0][1]
    quotes = [s for s, p in sentences if p.n == passage.n][:sentences_wanted]
    level = spec.bloom if spec.bloom in _LONG else "understand"
    stem = _LONG[level].format(topic=_topic(passage), where=_where(passage))
    return _open(spec.model_copy(update={"bloom": level}), stem, quotes, passage, "heading")


def _open(spec: QuestionSpec, stem: str, quotes: list[str], passage: Passage, rule: str) -> Question:
    return Question(
        index=spec.index,
        kind=spec.kind,
        stem=stem,
        answer=" ".join(quotes),
        bloom=spec.bloom,
        difficulty=spec.difficulty,
        marks=spec.marks,
        unit=spec.unit,
        citations=[_cite(passage, q) for q in quotes],
        rule=rule,
    )


LONG_SENTENCES = {"easy": 2, "medium": 3, "hard": 4}


def write_question(
    spec: QuestionSpec,
    passages: Sequence[Passage],
    pool: dict[str, list[str]],
    seed: int,
    rejected: Sequence[Question] = (),
) -> Question | None:
    """The question for one spec, or None when its passages offer nothing to ask. Sentences an
    earlier (rejected) attempt was built on are not used again."""
    rng = random.Random(f"{seed}:{spec.index}:{len(rejected)}")
    avoid = {normal_words(c.quote) for q in rejected for c in q.citations}
    if spec.kind == "mcq":
        return write_mcq(spec, passages, pool, rng, avoid)
    if spec.kind == "short":
        return write_short(spec, passages, avoid)
    return write_long(spec, passages, avoid, LONG_SENTENCES[spec.difficulty])
