"""The extractive answer: the documents' own best sentences, readable and cited (pure).

Without a language model the answer can only quote, so quality comes from what is quoted: whole
sentences (never a heading or half a PDF line), the one that best answers the question first,
each with the citation of its passage, and a disagreement between sources said in words rather
than left for the reader to spot in two figures quoted side by side.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from rag_common.messages import Passage

# (question, sentences) -> cosine similarity of each sentence to the question, in order.
SentenceScorer = Callable[[str, Sequence[str]], Sequence[float]]

EXTRACTIVE_PREFIX = "From the documents:"
NOTHING_TO_QUOTE = "The documents found hold no complete sentence to quote for this question."

KIND_SENTENCE, KIND_ITEM, KIND_ROW = "sentence", "item", "row"

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
MAX_ITEM_CHARS = 400  # a longer list item is quoted sentence by sentence

# --- text cleaning ---------------------------------------------------------------------------
_EXCLUDED = "\ufffc"  # stands in for an excluded span; any unit touching it is dropped
_BULLET_GLYPHS = "\x7f•◦▪▫‣⁃●○■□◆◇►▸▹➢➤✓✔✗∙·\uf0b7\uf0a7\uf076\uf0d8\uf0fc"
_LINE_BULLET = re.compile(rf"^\s*[{re.escape(_BULLET_GLYPHS)}]+\s*")
_INLINE_BULLET = re.compile(rf"\s+[{re.escape(_BULLET_GLYPHS)}]+\s+")
_STRAY_GLYPH = re.compile(rf"[{re.escape(_BULLET_GLYPHS)}]")
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "\u00a0": " ", "\u2009": " "})
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
# Control characters (tab and newline are handled before), private-use glyphs of symbol fonts and
# invisible format characters: none of them is text a reader should see.
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ue000-\uf8ff\u200b-\u200f\u202a-\u202e\u2060-\u2064]")

_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,2}[.)]|[a-z][.)])\s+")
_MD_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^(?:```|~~~)")
_QUESTION_LINE = re.compile(r"^Q:\s*")
_ANSWER_LINE = re.compile(r"^A:\s*")
# "Header: value; Header: value" as the ingest parser serialises table rows.
_CELL = r"[^:;\n]{1,60}:\s[^;\n]*"
_TABLE_ROW = re.compile(rf"^{_CELL}(?:;\s{_CELL})+$")

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_STRONG = re.compile(r"\*\*|__|`")
_EMPHASIS = re.compile(r"(?<![\w*])[*_](\S(?:[^*_]*?\S)?)[*_](?![\w*])")
# A document's own "[2]" would read as a citation of passage 2.
_FAKE_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")

_TERMINAL = re.compile(r"[.!?][\"'”’)\]]*$")
_ENDS_CLAUSE = re.compile(r"[.!?:][\"'”’)\]]*$")
_SENTENCE_BREAK = re.compile(r"([.!?])([\"'”’)\]]*)\s+(?=[A-Z0-9\"'“‘(\[$])")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs approx incl no nr fig mr mrs ms dr st inc ltd co corp dept est jan feb mar apr jun jul aug "
    "sep sept oct nov dec mon tue wed thu fri sat sun".split()
)
# A line ending in one of these words was cut by the page width, not by the author.
_CONTINUING = frozenset(
    "a an the and or but nor of to in on at by for with from into than that which who whose as is are was "
    "were be been has have had can will may must should would could not your our their its this these those "
    "per via if when while after before until up".split()
)
# Hyphenated line wraps of these stay hyphenated ("self-\nservice"); others close up ("re-\nfund").
_COMPOUND_PREFIXES = frozenset(
    "self well non built real high low full part cross two three four five end one long short time user third "
    "first read write sign opt add log check follow set".split()
)

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


@dataclass(frozen=True, slots=True)
class Candidate:
    """One quotable unit of passage ``n``: a sentence, a whole list item or a whole table row.

    ``context`` is the section and the heading above the unit: it helps decide relevance but is
    never quoted, since a heading alone answers nothing. The first unit under a heading (``lead``)
    is usually what the heading promises, so it is credited with the heading's words in full.
    """

    text: str
    n: int
    rank: int  # 0 for the retriever's best passage
    position: int  # order of the unit within its passage
    kind: str  # "sentence" | "item" | "row"
    context: str = ""
    lead: bool = False  # first unit under its heading: the one a heading or FAQ question introduces


# --- candidates ------------------------------------------------------------------------------


def candidate_sentences(
    passages: Sequence[Passage], *, excluded: Mapping[int, Sequence[tuple[int, int]]] | None = None
) -> list[Candidate]:
    """The readable units of each passage, in passage then document order.

    PDF line wraps are rejoined, glyphs and Markdown markup removed, table rows and list items
    kept whole; headings, fragments (a window cut mid-sentence, a page footer, a PDF table
    line), questions and anything overlapping an ``excluded`` character range of the passage's
    text are dropped, so whatever is picked from this list can be quoted as it stands.
    Excluded ranges are the injection spans found at ingest: they must never be quoted.
    """
    excluded = excluded or {}
    candidates: list[Candidate] = []
    for rank, passage in enumerate(passages):
        text = _mask(passage.text, excluded.get(passage.n, ()))
        position, last_heading = 0, None
        for kind, unit, heading, alone in _units(_clean_glyphs(text), passage.kind):
            if _readable(unit, kind, passage.section):
                context = _join(passage.section, heading)
                lead = heading != last_heading and alone
                candidates.append(Candidate(unit, passage.n, rank, position, kind, context, lead))
                position, last_heading = position + 1, heading
    return candidates


def _mask(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    """Replace each excluded range by a marker on its own line, so nothing of it can be quoted.

    A range inside a table row takes the whole row: a row is quoted whole or not at all.
    """
    for start, end in sorted(ranges, reverse=True):
        start, end = max(0, start), min(len(text), end)
        if start >= end:
            continue
        if _TABLE_ROW.match(_line_around(text, start)) or _TABLE_ROW.match(_line_around(text, end - 1)):
            start = text.rfind("\n", 0, start) + 1
            end = len(text) if (stop := text.find("\n", end)) < 0 else stop
        text = f"{text[:start]}\n{_EXCLUDED}\n{text[end:]}"
    return text


def _line_around(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    stop = text.find("\n", index)
    return text[start : len(text) if stop < 0 else stop].strip()


def _clean_glyphs(text: str) -> str:
    """Plain characters: ligatures opened, invisible and control characters gone, bullets as "- "."""
    text = _INVISIBLE.sub("", text.translate(_LIGATURES)).replace("\r\n", "\n").replace("\r", "\n")
    lines = []
    for line in text.split("\n"):
        line = _LINE_BULLET.sub("- ", line) if _LINE_BULLET.match(line) else line
        line = _INLINE_BULLET.sub("\n- ", line)  # PDF extraction can put several bullets on a line
        line = _STRAY_GLYPH.sub(" ", line).replace("\t", " ")
        lines.append(_CONTROL.sub("", line))
    return "\n".join(lines)


def _units(text: str, passage_kind: str) -> Iterator[tuple[str, str, str, bool]]:
    """(kind, text, heading above it, whether that heading stands alone) for every unit.

    Headings, FAQ questions, lead-ins such as "Every project has four views:" and short
    unpunctuated list entries ("2. How uptime is measured") become the heading of what follows.
    Several such lines in a row are more likely a PDF table flattened into lines than a heading,
    so they give context but do not make the next unit the heading's answer.
    """
    heading, in_a_row = "", 0

    def headed(line: str) -> None:
        nonlocal heading, in_a_row
        heading, in_a_row = line, in_a_row + 1

    for kind, line in _logical_lines(text, passage_kind):
        plain = _strip_markup(line)
        if kind in ("heading", "question"):
            headed(plain)
        elif kind == KIND_ROW:
            yield KIND_ROW, plain, heading, in_a_row <= 1
            in_a_row = 0
        elif kind == KIND_ITEM and len(plain) <= MAX_ITEM_CHARS:
            if _ENDS_CLAUSE.search(plain) or ": " in plain or len(plain.split()) >= 5:
                yield KIND_ITEM, plain, heading, in_a_row <= 1
                in_a_row = 0
            else:
                headed(plain)
        elif _looks_like_heading(plain):
            headed(plain)
        else:
            for sentence in _split_sentences(plain):
                if sentence.endswith(":"):
                    headed(sentence)
                else:
                    yield KIND_SENTENCE, sentence, heading, in_a_row <= 1
                    in_a_row = 0


def _logical_lines(text: str, passage_kind: str) -> Iterator[tuple[str, str]]:
    """Physical lines regrouped into paragraphs, list items, table rows, headings and questions.

    A line is joined to the one before when that one was cut by the page width rather than ended
    by its author (see ``_wrapped``); a list marker, a table row, a Q:/A: line or a blank line
    always starts a new unit.
    """
    lines = [line.strip() for line in text.split("\n")]
    wrap_width = max((len(line) for line in lines), default=0) * 0.75
    buffer, buffer_kind, last_line, fenced = "", "", "", False

    def flush() -> Iterator[tuple[str, str]]:
        nonlocal buffer, buffer_kind, last_line
        if buffer:
            yield buffer_kind, buffer
        buffer, buffer_kind, last_line = "", "", ""

    for line in lines:
        if _FENCE.match(line):
            yield from flush()
            fenced = not fenced
        elif fenced:
            continue  # code is for copying from the document, not for reading as an answer
        elif not line:
            yield from flush()
        elif _MD_HEADING.match(line):
            yield from flush()
            yield "heading", line.lstrip("#").strip()
        elif _QUESTION_LINE.match(line):
            yield from flush()
            buffer, buffer_kind = _QUESTION_LINE.sub("", line), "question"
        elif (passage_kind == "table" and ": " in line) or _TABLE_ROW.match(line):
            yield from flush()
            yield KIND_ROW, line
        elif _ANSWER_LINE.match(line):
            yield from flush()
            buffer, buffer_kind = _ANSWER_LINE.sub("", line), KIND_SENTENCE
        elif _LIST_MARKER.match(line):
            yield from flush()
            buffer, buffer_kind = _LIST_MARKER.sub("", line), KIND_ITEM
        elif buffer and _wrapped(last_line, line, wrap_width):
            buffer = _rejoin(buffer, line)
        else:
            yield from flush()
            buffer, buffer_kind = line, KIND_SENTENCE
        last_line = line if buffer else ""
    yield from flush()


def _wrapped(previous: str, line: str, wrap_width: float) -> bool:
    """Whether ``line`` continues the physical line ``previous``.

    It does when ``previous`` ends without closing punctuation and the next line starts in
    lowercase, or ``previous`` ends on a word or sign that cannot end a sentence, or it is a
    line of prose about as long as the longest line (a wrap at the page width). A short line
    followed by a capitalised one is a heading over its text, not a wrap. The marker of an
    excluded span absorbs the unfinished sentence before it, so no half of it is quoted.
    """
    if not previous or _ENDS_CLAUSE.search(previous):
        return False
    if _EXCLUDED in line:
        return True
    words = previous.split()
    return (
        line[:1].islower()
        or line[:1] in "$(%&,"
        or words[-1].lower() in _CONTINUING
        or previous.endswith((",", "-", "&", "/"))
        or (len(previous) >= max(40.0, wrap_width) and len(words) > 10 and not _title_like(words))
    )


def _rejoin(previous: str, line: str) -> str:
    """Join a wrapped line; a word hyphenated by the wrap closes up unless it is a compound."""
    hyphenated = re.search(r"(\w+)-$", previous)
    if hyphenated and line[:1].islower():
        stem = hyphenated.group(1).lower()
        return previous + line if stem in _COMPOUND_PREFIXES else previous[:-1] + line
    return f"{previous} {line}"


def _strip_markup(text: str) -> str:
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _HTML_TAG.sub(" ", text)
    text = _STRONG.sub("", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _FAKE_CITATION.sub("", text.lstrip("> "))
    return " ".join(text.split())


def _looks_like_heading(text: str) -> bool:
    """A short line without closing punctuation: a title, not a statement."""
    return not _ENDS_CLAUSE.search(text) and len(text.split()) <= 10


def _split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph; "e.g. Slack" and "99.9%" do not end one."""
    sentences, start = [], 0
    for match in _SENTENCE_BREAK.finditer(text):
        before = text[start : match.start()].split()
        word = before[-1].lower().rstrip(".") if before else ""
        if match.group(1) == "." and (word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
            continue
        sentences.append(text[start : match.end()].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def _readable(unit: str, kind: str, section: str) -> bool:
    """Whether a unit can be quoted alone: a complete statement, not a heading or a fragment."""
    if not unit or _EXCLUDED in unit:
        return False
    words = unit.split()
    if kind == KIND_ROW:
        return len(words) >= 2
    if _normal(unit) == _normal(section) or unit.endswith("?"):
        return False
    if not unit[0].isupper() and not unit[0].isdigit() and unit[0] not in "$\"'“(":
        return kind == KIND_ITEM and len(words) >= 4  # a sentence starting lowercase was cut
    if _TERMINAL.search(unit) or unit.endswith(":"):
        return len(words) >= 3
    if kind == KIND_ITEM:
        return len(words) >= 4 and not _title_like(words)
    # Unpunctuated prose survives only when long and mostly lowercase words: a footer, a title or
    # a PDF table line flattened into words is neither.
    lower = sum(1 for w in words if w.isalpha() and w.islower())
    return len(words) >= 12 and lower >= 0.6 * len(words)


def _title_like(words: Sequence[str]) -> bool:
    long_words = [w for w in words if len(w) > 3 and w[0].isalpha()]
    return bool(long_words) and sum(w[0].isupper() for w in long_words) >= 0.7 * len(long_words)


def _normal(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


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
    question: str, candidates: Sequence[Candidate], scorer: SentenceScorer | None, max_scored: int = MAX_SCORED
) -> list[_Scored]:
    """Every candidate's relevance to the question, best first."""
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
    shortlist = [i for i in order[:max_scored] if lexical[i] >= reach] if scorer is not None else order
    semantic = dict.fromkeys(shortlist, 0.0)
    # One sentence within reach is the answer whatever the model says of it: no model run.
    if scorer is not None and len(shortlist) > 1:
        similarities = list(scorer(question, [candidates[i].text for i in shortlist]))
        if len(similarities) != len(shortlist):
            raise ValueError(f"sentence scorer returned {len(similarities)} scores for {len(shortlist)} sentences")
        semantic = {i: max(0.0, float(s)) for i, s in zip(shortlist, similarities, strict=True)}

    scored = [
        _Scored(candidates[i], lexical[i] + semantic[i], lexical[i] + semantic[i] + prior(candidates[i]))
        for i in shortlist
    ]
    return sorted(scored, key=lambda s: s.key)


def _near_duplicate(a: str, b: str) -> bool:
    """Same words (and the same numbers): quoting both would only repeat the answer."""
    if _normal(a) == _normal(b):
        return True
    ta, tb = set(_normal(a).split()), set(_normal(b).split())
    numbers_a, numbers_b = {t for t in ta if t[0].isdigit()}, {t for t in tb if t[0].isdigit()}
    if numbers_a != numbers_b:
        return False
    return len(ta & tb) >= NEAR_DUPLICATE * len(ta | tb)


def _names(text: str) -> set[str]:
    """Proper names of a question ("Pro", "GitHub"): capitalised words after its first word."""
    words = _TOKEN_CASED.findall(text)[1:]
    return {w.lower() for w in words if w[0].isupper() and w.lower() not in _STOP}


def _select(question: str, scored: Sequence[_Scored], max_sentences: int) -> list[Candidate]:
    """The best unit, then up to ``max_sentences - 1`` others nearly as relevant and not repeats.

    When the question names things (and the best unit names one of them), a further unit must
    name one too: after "The Pro plan costs $12" for "How much is the Pro plan?", "The Business
    plan costs $24" is not more of the answer, however many words it shares with the question;
    for "What uptime do Business and Enterprise get?" both plans' sentences are.
    """
    best = scored[0]
    chosen = [best.candidate]
    names = _names(question)
    named = names if names & set(_normal(best.candidate.text).split()) else set()
    for item in scored[1:]:
        if len(chosen) >= max_sentences or item.relevance < RELATIVE_THRESHOLD * best.relevance:
            break
        if named and not named & set(_normal(item.candidate.text).split()):
            continue
        if not any(_near_duplicate(item.candidate.text, c.text) for c in chosen):
            chosen.append(item.candidate)
    return chosen


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
) -> str:
    """Answer with the passages' own sentences, the single most relevant first, each cited.

    Relevance is the lexical overlap of the question's salient terms plus, when a ``scorer`` is
    given, the embedding similarity, with a small prior for the retriever's order. Further
    sentences are added only when nearly as relevant as the best and not repeating it. When no
    sentence shares anything with the question, the best passage's first sentences are quoted.
    A conflict whose subject the question or the quoted sentences name is said in words, with a
    citation for each side. ``excluded`` character ranges (per passage ``n``) are never quoted.
    """
    if max_sentences < 1:
        raise ValueError(f"max_sentences must be at least 1, got {max_sentences}")
    candidates = _unique(candidate_sentences(passages, excluded=excluded))
    if not candidates:
        return f"{EXTRACTIVE_PREFIX}\n{NOTHING_TO_QUOTE}"

    scored = _score(question, candidates, scorer, max_scored)
    if scored[0].relevance > 0:
        chosen = _select(question, scored, max_sentences)
    else:
        first = min(c.rank for c in candidates)
        chosen = [c for c in candidates if c.rank == first][: min(2, max_sentences)]

    notes = _conflict_sentences(question, chosen, passages, conflicts, excluded or {})
    blocks = [_cited(c) for c in chosen]
    kinds = [c.kind for c in chosen]
    blocks[1:1] = notes
    kinds[1:1] = [KIND_SENTENCE] * len(notes)
    return f"{EXTRACTIVE_PREFIX}\n{_layout(blocks, kinds)}"


def _unique(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Exact repeats (the same sentence in two passages) are kept once, from the better passage."""
    seen: set[str] = set()
    unique = []
    for candidate in candidates:
        key = _normal(candidate.text)
        if key not in seen:
            seen.add(key)
            unique.append(candidate)
    return unique


def _cited(candidate: Candidate) -> str:
    """The unit with its citation before the closing punctuation: "... per month [1]."."""
    text = candidate.text
    closing = re.search(r"[.!?:][\"'”’)\]]*$", text)
    if closing:
        return f"{text[: closing.start()].rstrip()} [{candidate.n}]{closing.group()}"
    return f"{text} [{candidate.n}]"


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
    asked = f"{question} {' '.join(c.text for c in chosen)}".lower()
    chosen_ns = [c.n for c in chosen]
    sentences = []
    for conflict in conflicts:
        words = conflict.subject.lower().split()
        if not words or not all(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", asked) for w in words):
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
        p for p in passages if p.source == source and any(v in _mask(p.text, excluded.get(p.n, ())) for v in values)
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
