"""Assessment questions written by rules a teacher would accept, from the retrieved passages (pure,
given the parse).

Each Bloom level is a form, and a question is labelled with the form it has:

- remember: recall, a wh-question by the answer's type ("How many minutes does ... default to?",
  "Which setting ...?"); "define" for a short answer; a cloze only at this level, when no
  question can be asked;
- understand: "why" or "how" for a statement with its reason or means; "meaning": pick the right
  description of a term;
- apply: "scenario": someone wants to do what a how-to sentence says; which command or setting fits;
- analyze: "compare" two things that two passages describe (short and long answers);
- evaluate: "better-option": should one do what a passage advises, for the reason it states.

A level the passages cannot support is written at the next level down, labelled so; the paper names
the levels it lacks. MCQ distractors are of the key's shape, the key's nearest neighbours among the
collection's whole terms (``forms_text.pick``). A stem never names a file or section: the source is
the question's ``source`` field. Short and long answers carry a marking scheme: cited points whose
marks add up to the question's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from rag_common.text.seeding import SEEDS_APART, seed_rank
from rag_common.text.words import normal_words
from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import (
    BLOOM_LEVELS,
    BloomLevel,
    Citation,
    MarkingPoint,
    Question,
    QuestionSpec,
)
from rag_generator.forms_text import (
    Embed,
    Pool,
    advice,
    build_pool,
    definition,
    other_subjects,
    pick,
    reason,
    scenario,
    term_candidates,
)
from rag_generator.linguistics import Term, question_for
from rag_generator.material import Sentence, content_sentences, seeded, unmarked_candidates

__all__ = ["LONG_SENTENCES", "Pool", "term_pool", "unmarked_candidates", "write_question"]

BLANK = "_____"
LONG_SENTENCES = {"easy": 3, "medium": 4, "hard": 5}
_RECALL_KINDS = ("quantity", "number", "money", "percent", "date", "setting", "flag", "command")
Draft = tuple[
    str, str, list[str], int | None, list[tuple[str, Sentence]], str
]  # stem, answer, options, key, points, form


def term_pool(passages: Sequence[Passage]) -> Pool:
    """The collection's distractor material (whole terms, reason clauses, meanings) from ``passages``."""
    return build_pool(passages)


def _source(passage: Passage) -> str:
    return f"{passage.source} > {passage.section}" if passage.section else passage.source


def _cite(sentence: Sentence) -> Citation:
    p = sentence.passage
    return Citation(source=p.source, section=p.section, page=p.page, chunk_index=p.chunk_index, quote=sentence.text)


def _split_marks(marks: float, n: int) -> list[float]:
    """``marks`` over ``n`` points in whole marks where it can (the first points take the rest)."""
    whole = int(marks)
    if whole != marks or whole < n:
        return [round(marks / n, 2)] * (n - 1) + [round(marks - round(marks / n, 2) * (n - 1), 2)]
    base, extra = divmod(whole, n)
    return [float(base + (1 if i < extra else 0)) for i in range(n)]


# --- MCQ forms ---------------------------------------------------------------------------------------


# A subject of this many of the material's sentences is its main actor ("the NATS server", "Northwind
# Health"): "What has a write deadline ...?" asks a student to guess it, not to know the material.
COMMON_SUBJECT = 3


def guessable(term: Term, pool: Pool) -> bool:
    """Whether ``term`` is the material's main actor, a key a student would guess."""
    return pool.subjects[normal_words(term.text)] >= COMMON_SUBJECT


def _recall(s: Sentence, pool: Pool, embed: Embed | None, rng: random.Random, plain: bool = False) -> Draft | None:
    """A wh-question asking for the sentence's subject, value, command or setting (``plain``: a
    single common word may be the key too, when nothing better can be asked)."""
    subjects = [t for t in s.terms if t.role == "subject"]
    values = [t for t in s.terms if t.kind in _RECALL_KINDS]
    strong = [t for t in subjects if not t_weak(t)]
    # A named subject stays in the stem when a value can be asked instead: "Which port does the
    # Indigo sensor listen on?" is one question, "What listens on port 7380?" one of many alike.
    first = [*values, *strong] if any(t.kind == "name" for t in strong) else [*strong, *values]
    ordered = [*first, *(t for t in subjects if t_weak(t))]  # "What waits ...?" for "server": the last resort
    for term in ordered:
        if t_weak(term) and not plain and term.role != "subject":
            continue
        if s.asked.count(term.text) > 1:
            continue
        if term.role == "subject" and guessable(term, pool):
            continue
        stem = question_for(s.doc, term)
        if not stem or normal_words(term.text) in normal_words(stem):
            continue
        distractors = pick(term.text, term_candidates(term, pool.terms), [s.passage], embed, rng)
        if len(distractors) == 3:
            return stem, term.text, [term.text, *distractors], 0, [(term.text, s)], "recall"
    return None


def t_weak(term: Term) -> bool:
    """A key too plain to ask for: a single common word ("server", "clients")."""
    return term.kind == "phrase" and len(term.text.split()) == 1


def _cloze(s: Sentence, pool: Pool, embed: Embed | None, rng: random.Random) -> Draft | None:
    for term in s.terms:
        if s.asked.count(term.text) != 1 or term.kind not in {*_RECALL_KINDS, "name"}:
            continue
        if guessable(term, pool):
            continue
        distractors = pick(term.text, term_candidates(term, pool.terms), [s.passage], embed, rng)
        if len(distractors) == 3:
            blanked = s.asked[: term.start] + BLANK + s.asked[term.end :]
            return f"Fill in the blank: {blanked}", term.text, [term.text, *distractors], 0, [(term.text, s)], "cloze"
    return None


def _why(s: Sentence, pool: Pool, embed: Embed | None, rng: random.Random) -> Draft | None:
    found = reason(s)
    if not found:
        return None
    stem, clause = found
    distractors = pick(clause, pool.clauses, [s.passage], embed, rng)
    if len(distractors) < 3:
        return None
    return stem, clause, [clause, *distractors], 0, [(clause, s)], stem.split()[0].lower()


def _meaning(s: Sentence, pool: Pool, embed: Embed | None, rng: random.Random) -> Draft | None:
    found = definition(s)
    if not found:
        return None
    term, meaning = found
    distractors = pick(meaning, other_subjects(term, pool), [s.passage], embed, rng)
    if len(distractors) < 3:
        return None
    return f"Which description fits {term}?", meaning, [meaning, *distractors], 0, [(meaning, s)], "meaning"


def _scenario(s: Sentence, pool: Pool, embed: Embed | None, rng: random.Random) -> Draft | None:
    found = scenario(s)
    if not found:
        return None
    purpose, term = found
    distractors = pick(term.text, [t.text for t in pool.terms if t.kind == term.kind], [s.passage], embed, rng)
    if len(distractors) < 3:
        return None
    stem = f"You want to {purpose}. Which {term.kind} fits?"
    return stem, term.text, [term.text, *distractors], 0, [(term.text, s)], "scenario"


MCQ_FORMS: dict[BloomLevel, tuple[Callable[[Sentence, Pool, Embed | None, random.Random], Draft | None], ...]] = {
    "remember": (_recall, _cloze),
    "understand": (_why, _meaning),
    "apply": (_scenario,),
}

# --- short and long forms ----------------------------------------------------------------------------


def _open_recall(sentences: Sequence[Sentence], kind: str, pool: Pool) -> Draft | None:
    for s in sentences:
        found = definition(s)
        if found:
            return f"Give the definition of {found[0]}.", s.text, [], None, [(f"{found[0]} is {found[1]}", s)], "define"
    for s in sentences:
        for term in s.terms:
            stem = question_for(s.doc, term) if term.role == "subject" or term.kind in _RECALL_KINDS else None
            if stem and normal_words(term.text) not in normal_words(stem):
                return stem, s.text, [], None, [(term.text, s)], "recall"
    return None


def _open_why(sentences: Sequence[Sentence], kind: str, pool: Pool) -> Draft | None:
    for s in sentences:
        found = reason(s)
        if found:
            stem = found[0] if kind == "short" else f"{found[0]} Explain the reasons the material gives."
            points = _with_neighbours(s, sentences, kind, found[1])
            return stem, s.text, [], None, points, found[0].split()[0].lower()
    return None


def _open_scenario(sentences: Sequence[Sentence], kind: str, pool: Pool) -> Draft | None:
    for s in sentences:
        found = scenario(s)
        if found:
            purpose, term = found
            stem = f"You want to {purpose}. Which {term.kind} would you use, and how?"
            return stem, s.text, [], None, [(f"{term.text}: {s.text}", s)], "scenario"
    return None


def _compare(sentences: Sequence[Sentence], kind: str, pool: Pool) -> Draft | None:
    subjects = [
        (s, t)
        for s in sentences
        for t in s.terms
        if t.role == "subject" and t.kind in {"name", "phrase"} and not t_weak(t)
    ]
    subjects.sort(key=lambda st: definition(st[0]) is None)  # defined things first: they compare best
    for i, (a, ta) in enumerate(subjects):
        for b, tb in subjects[i + 1 :]:
            if a.passage.section == b.passage.section and a.passage.source == b.passage.source:
                continue
            if normal_words(ta.text) in normal_words(tb.text) or normal_words(tb.text) in normal_words(ta.text):
                continue
            stem = f"Compare {ta.text} and {tb.text}: what does the material say of each, and how do they differ?"
            points = [(f"{ta.text}: {a.text}", a), (f"{tb.text}: {b.text}", b)]
            if kind == "long":
                points += [(f"{ta.text}: {x.text}", x) for x in sentences if x.passage is a.passage and x is not a][:1]
                points += [(f"{tb.text}: {x.text}", x) for x in sentences if x.passage is b.passage and x is not b][:1]
            return stem, " ".join(p[1].text for p in points), [], None, points, "compare"
    return None


def _better_option(sentences: Sequence[Sentence], kind: str, pool: Pool) -> Draft | None:
    for s in sentences:
        found = advice(s)
        if found:
            stem = f"{found[0]} Judge it, and justify your answer with the reason the material gives."
            return stem, s.text, [], None, _with_neighbours(s, sentences, kind, found[1]), "better-option"
    return None


def _explain(sentences: Sequence[Sentence], kind: str, pool: Pool, loose: bool = False) -> Draft | None:
    """Explain X, X a defined term or a name (``loose``: any subject of two words or more)."""
    kinds = {"name", "phrase"} if loose else {"name"}
    for s in sentences:
        defined = definition(s)
        topic = next((t for t in s.terms if t.role == "subject" and t.kind in kinds and not t_weak(t)), None)
        name = defined[0] if defined else topic.text if topic else ""
        if not name or len(name.split()) > 5:
            continue  # only a defined term or a name is a topic to explain
        head = normal_words(name).split()[-1].rstrip("s")
        about = [x for x in sentences if x.passage is s.passage and x is not s and head in normal_words(x.text)]
        points = [(s.text, s), *((x.text, x) for x in about[: 3 if kind == "long" else 1])]
        if len(points) < 2 and not loose:
            continue  # the passage says no more of it: nothing to explain
        return f"Explain {name}: what it is, how it works and why it matters.", "", [], None, points, "explain"
    return None


def _with_neighbours(s: Sentence, sentences: Sequence[Sentence], kind: str, first: str) -> list[tuple[str, Sentence]]:
    """The sentence as the first point; the passage's next content sentences add one more (short)
    or three more (long)."""
    same = [x for x in sentences if x.passage is s.passage and x is not s]
    return [(first, s), *((x.text, x) for x in same[: 3 if kind == "long" else 1])]


OPEN_FORMS: dict[BloomLevel, tuple[Callable[[Sequence[Sentence], str, Pool], Draft | None], ...]] = {
    "remember": (_open_recall,),
    "understand": (_open_why, _explain),
    "apply": (_open_scenario,),
    "analyze": (_compare,),
    "evaluate": (_better_option,),
}


def _levels_from(level: BloomLevel) -> list[BloomLevel]:
    """The asked level, then the ones below it: a question is written at the highest the passages allow."""
    return list(reversed(BLOOM_LEVELS[: BLOOM_LEVELS.index(level) + 1]))


def write_question(
    spec: QuestionSpec,
    passages: Sequence[Passage],
    pool: Pool,
    seed: int,
    rejected: Sequence[Question] = (),
    embed: Embed | None = None,
    taken: set[str] = frozenset(),  # type: ignore[assignment]
) -> Question | None:
    """The question for one spec, at its level or the highest below it the passages support, or None
    when they offer nothing to ask. Sentences an earlier (rejected) attempt used are not used again,
    nor those other questions of the paper rest on (``taken``, normalised).

    An MCQ is drawn from the seed's own part of the sentences at any level before another seed's
    part at its own level (``rag_common.text.seeding``): the sentences few forms can use (a
    definition to describe, a reason) would otherwise be every seed's, and two papers would share
    them. A short or long answer needs two sentences or more, from two passages to compare: its
    level comes first."""
    rng = random.Random(f"{seed}:{spec.index}:{len(rejected)}")
    avoid = {normal_words(c.quote) for q in rejected for c in q.citations} | set(taken)
    sentences = seeded(content_sentences(passages, avoid), seed, spec.index + 3 * len(rejected))
    if not sentences:
        return None
    ranks = [seed_rank(normal_words(s.text), seed) for s in sentences]
    for parts in ((0,), tuple(range(SEEDS_APART))) if spec.kind == "mcq" else (tuple(range(SEEDS_APART)),):
        within = [s for s, r in zip(sentences, ranks, strict=True) if r in parts]
        for level in _levels_from(spec.bloom):
            if spec.kind == "mcq":  # part by part, every form in each
                for rank in parts:
                    group = [s for s, r in zip(sentences, ranks, strict=True) if r == rank]
                    for form in MCQ_FORMS.get(level, ()):
                        for s in group:
                            draft = form(s, pool, embed, rng)
                            if draft:
                                return _question(spec, level, draft, rng)
            else:
                if spec.kind == "long" and level == "remember":
                    continue  # a long answer is more than a recall
                for open_form in OPEN_FORMS.get(level, ()):
                    draft = open_form(within, spec.kind, pool)
                    if draft:
                        return _question(spec, level, draft, rng)
    if spec.kind == "mcq":
        for s in sentences:
            draft = _recall(s, pool, embed, rng, plain=True)
            if draft:
                return _question(spec, "remember", draft, rng)
    if spec.kind == "long":
        draft = _explain(sentences, "long", pool, loose=True)
        return _question(spec, "understand", draft, rng) if draft else None
    return None


def _question(spec: QuestionSpec, level: BloomLevel, draft: Draft, rng: random.Random) -> Question:
    stem, answer, options, _key, points, form = draft
    if spec.kind != "mcq" and spec.marks == int(spec.marks) and len(points) > spec.marks >= 1:
        points = points[: int(spec.marks)]  # a point is worth a mark at least
    cited = points[0][1]
    answer_index = None
    if options:
        key_text = options[0]
        rng.shuffle(options)
        answer_index = options.index(key_text)
        answer = key_text
    marks = _split_marks(spec.marks, len(points)) if spec.kind != "mcq" else []
    scheme = [MarkingPoint(point=text, marks=m, citation=_cite(s)) for (text, s), m in zip(points, marks, strict=False)]
    citations: list[Citation] = []
    for _, s in points:
        if all(c.quote != s.text for c in citations):
            citations.append(_cite(s))
    if spec.kind != "mcq" and not answer:
        answer = " ".join(c.quote for c in citations)
    return Question(
        index=spec.index,
        kind=spec.kind,
        stem=stem,
        options=options,
        answer_index=answer_index,
        answer=answer,
        bloom=level,
        difficulty=spec.difficulty,
        marks=spec.marks,
        unit=spec.unit,
        source=_source(cited.passage),
        citations=citations,
        scheme=scheme,
        rule=form,
    )
