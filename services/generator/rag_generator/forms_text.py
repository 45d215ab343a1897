"""What a content sentence can be asked as, and the distractors of a key (pure, given the parse).

- ``reason``: "X because Y" / "X so that Y" / "X by using Y" → ("Why/How does X?", "because Y");
- ``definition``: "X is a Y that Z" → (X, "a Y that Z");
- ``scenario``: a how-to sentence with a command or setting and its purpose → (purpose, the term);
- ``advice``: "X should Y because Z" → "Should X Y?";
- ``pick``: distractors of the key's shape, the key's nearest neighbours by embedding among the
  collection's whole terms, none that paraphrases the key or that the cited passage holds.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag_common.text.term_shape import MAX_LENGTH_RATIO, length_ratio, same_shape, shape_of
from rag_common.text.words import normal_words
from rag_common.wire.messages import Passage
from rag_generator.linguistics import Term, invert
from rag_generator.material import Sentence, content_sentences, parsed

Embed = Callable[[list[str]], list[list[float]]]

_CONNECTIVE = re.compile(
    r",?\s+(because|so that|in order to|to ensure|to avoid|to prevent|"
    r"by (?:using|adding|setting|providing|sending|running|passing|specifying|signaling|signalling|creating|"
    r"making|including|configuring|enabling|calling)\b)"
)
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def reason(sentence: Sentence) -> tuple[str, str] | None:
    """("Why does the server wait?", "to let clients ...") for a statement with its reason or means."""
    text = sentence.asked.rstrip(" .")
    match = _CONNECTIVE.search(text)
    if not match or match.start() < 15:
        return None
    main, clause = text[: match.start()].strip(" ,"), text[match.start(1) :].strip()
    if re.search(r",\s*\w+ing$|\b(?:and|or|but|which|that)$", main):
        return None  # the clause was cut inside a phrase ("..., helping")
    if clause.startswith("in order to "):
        clause = clause[len("in order ") :]
    if not 3 <= len(clause.split()) <= 20 or not 3 <= len(main.split()) <= 25:
        return None
    body = invert(parsed(main + "."), len(main))
    if not body:
        return None
    wh = "How" if clause.startswith("by ") else "Why"
    return f"{wh} {body.rstrip(' .,')}?", clause


_DEFINED = re.compile(r"^(?P<rest>(?:an?|the|one of the)\s.{12,})$", re.IGNORECASE)


def definition(sentence: Sentence) -> tuple[str, str] | None:
    """(term, meaning) of a defining sentence: its whole subject, and what it is said to be."""
    subject = next((t for t in sentence.terms if t.role == "subject"), None)
    roots = [t for t in sentence.doc if t.dep_ == "ROOT"]
    if subject is None or not roots or roots[0].lemma_ not in {"be", "mean", "refer"}:
        return None
    if sentence.asked[: subject.start].strip().lower() not in {"", "a", "an", "the"}:
        return None
    root = roots[0]
    start = root.idx - sentence.doc[0].idx + len(root.text)
    rest = sentence.asked[start:].strip(" .")
    rest = re.sub(r"^to\s+", "", rest) if root.lemma_ == "refer" else rest
    found = _DEFINED.match(rest)
    if not found or not 4 <= len(rest.split()) <= 25 or len(subject.text.split()) > 5:
        return None
    return subject.text, rest


_PURPOSE = (
    re.compile(r"^To (?P<purpose>[a-z]\w+ [^,]{8,90}), "),
    re.compile(
        r"\b(?:lets|allows|enables)\s+(?:you|clients|users|applications|the \w+)\s+to\s+(?P<purpose>[^,.;]{8,90})"
    ),
    re.compile(r"\b(?:use|set|run|pass|specify|add|configure|enable)\b.*?\bto\s+(?P<purpose>[a-z]\w+ [^,.;]{8,90})"),
)


def scenario(sentence: Sentence) -> tuple[str, Term] | None:
    """(what someone wants to do, the command or setting that does it) of a how-to sentence."""
    code = [t for t in sentence.terms if t.kind in {"setting", "flag", "command"}]
    if not code:
        return None
    for pattern in _PURPOSE:
        found = pattern.search(sentence.asked)
        if not found:
            continue
        purpose = found.group("purpose").strip(" .")
        term = code[0]
        if term.text not in purpose and 3 <= len(purpose.split()) <= 18:
            return purpose, term
    return None


_ADVICE_REASON = re.compile(r"\b(because|so that|to avoid|to ensure|to prevent|since|otherwise|as a)\b")


def advice(sentence: Sentence) -> tuple[str, str] | None:
    """("Should a server be shut down with lame duck mode?", the reason) of a recommendation."""
    text = sentence.asked.rstrip(" .")
    if not re.search(r"\b(?:should|must)\b", text) or not _ADVICE_REASON.search(text):
        return None
    cut = _ADVICE_REASON.search(text)
    assert cut is not None
    main = text[: cut.start()].strip(" ,")
    body = invert(parsed(main + "."), len(main))
    if not body or not body.startswith(("should ", "must ")):
        return None
    body = "should" + body[body.index(" ") :]
    return f"{body[:1].upper()}{body[1:].rstrip(' .,')}?", text[cut.start() :]


# --- distractors -----------------------------------------------------------------------------------


def _singular(words: str) -> str:
    """Words with a plural "s" taken off ("plans" and "plan" say the same)."""
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words.split())


def is_paraphrase(a: str, b: str) -> bool:
    """Whether two terms say the same: equal words, one inside the other, the same number, or
    half their words shared."""
    na, nb = _singular(normal_words(a)), _singular(normal_words(b))
    if not na or not nb or na == nb or f" {na} " in f" {nb} " or f" {nb} " in f" {na} ":
        return True
    va, vb = _NUMBER.search(a), _NUMBER.search(b)
    if va and vb and va.group(0) == vb.group(0):
        return True
    wa, wb = set(na.split()), set(nb.split())
    return bool(wa & wb) and len(wa & wb) * 2 >= min(len(wa), len(wb)) and va is None


def held(text: str, passages: Sequence[Passage]) -> bool:
    """Whether the passages hold the text (words compared, markup ignored)."""
    words = f" {normal_words(text)} "
    return any(words in f" {normal_words(p.text)} " for p in passages)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def nearest(key: str, candidates: list[str], embed: Embed | None, rng: random.Random) -> list[str]:
    """The candidates nearest the key in embedding space (shuffled when there is no model)."""
    if embed is None or not candidates:
        shuffled = list(candidates)
        rng.shuffle(shuffled)
        return shuffled
    vectors = embed([key, *candidates])
    scored = sorted(zip(candidates, vectors[1:], strict=True), key=lambda cv: -_cosine(vectors[0], cv[1]))
    return [c for c, _ in scored]


def pick(
    key: str,
    candidates: Sequence[str],
    cited: Sequence[Passage],
    embed: Embed | None,
    rng: random.Random,
    n: int = 3,
) -> list[str]:
    """``n`` distractors of the key's shape: the key's nearest neighbours among ``candidates`` that do
    not paraphrase it or each other, that the cited passages do not hold, lengths within 3x."""
    shape = shape_of(key)
    fitting = [
        c
        for c in dict.fromkeys(candidates)
        if same_shape(shape, shape_of(c))
        and length_ratio([key, c]) <= MAX_LENGTH_RATIO
        and not is_paraphrase(c, key)
        and not held(c, cited)
    ]
    chosen: list[str] = []
    for option in nearest(key, fitting, embed, rng):
        if all(not is_paraphrase(option, other) for other in chosen) and length_ratio([key, *chosen, option]) <= 3:
            chosen.append(option)
        if len(chosen) == n:
            break
    return chosen


def term_candidates(key: Term, pool: Sequence[Term]) -> list[str]:
    """The pool's terms a distractor of ``key`` may be: of its kind and, for an entity, its type."""
    return [
        t.text
        for t in pool
        if t.kind == key.kind and (not key.label or not t.label or t.label == key.label or key.kind == "quantity")
    ]


# --- the collection's distractor material ------------------------------------------------------------


@dataclass(slots=True)
class Pool:
    """What the collection offers as distractors: its whole terms, reason clauses and definitions."""

    terms: list[Term] = field(default_factory=list)
    clauses: list[str] = field(default_factory=list)  # "because ...", "to ...", "so that ...", "by ..."
    meanings: list[str] = field(default_factory=list)  # the predicate of a definition: "a string that ..."
    defines: dict[str, str] = field(default_factory=dict)  # a meaning -> the term it defines there
    # How many content sentences each term (normalised) is the subject of: the material's main actor
    subjects: Counter[str] = field(default_factory=Counter)


def build_pool(passages: Sequence[Passage]) -> Pool:
    """Every whole term, reason clause and definition of the passages' content sentences, each once."""
    pool = Pool()
    seen: set[str] = set()
    for sentence in content_sentences(passages):
        pool.subjects.update({normal_words(t.text) for t in sentence.terms if t.role == "subject"})
        for term in sentence.terms:
            key = f"{term.kind}:{normal_words(term.text)}"
            if key not in seen:
                seen.add(key)
                pool.terms.append(term)
        found = reason(sentence)
        if found and normal_words(found[1]) not in seen:
            seen.add(normal_words(found[1]))
            pool.clauses.append(found[1])
        meaning = definition(sentence)
        if meaning and normal_words(meaning[1]) not in seen:
            seen.add(normal_words(meaning[1]))
            pool.meanings.append(meaning[1])
            pool.defines[meaning[1]] = meaning[0]
    return pool


def other_subjects(term: str, pool: Pool) -> list[str]:
    """The pool's meanings that define something else than ``term``: what another sentence says
    "Northwind Standard" is would be a second right answer to "Which description fits Northwind
    Standard plan?"."""
    own = normal_words(term)
    return [
        m
        for m in pool.meanings
        if not ((other := normal_words(pool.defines.get(m, ""))) and (other in own or own in other))
    ]
