"""Numbers that disagree between documents: the same subject and unit, different values (pure).

Shared by the generator, which says a disagreement in words in an extractive answer, and the
evaluator, which raises ``conflicting_sources``; both must see the same conflicts.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Protocol

from rag_common.text.sentences import split_sentences


class SourcedText(Protocol):
    """A passage as far as conflicts go: which document, and what it says."""

    @property
    def source(self) -> str:
        """The document the text comes from."""
        ...

    @property
    def text(self) -> str:
        """What the document says there."""
        ...


@dataclass(frozen=True, slots=True)
class Conflict:
    """Documents that state different numbers about the same thing, shown to the user as-is."""

    subject: str
    values: dict[str, list[str]]


# --- conflicting sources -----------------------------------------------------------------------

_AMOUNT = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# Only numbers with a unit are compared: bare numbers are too often versions, years or list items.
_QUANTITY = re.compile(
    rf"(?P<symbol>[$€£])\s?(?P<amount>{_AMOUNT})"
    rf"|(?<![\w.])(?P<value>{_AMOUNT})\s?(?P<unit>%|(?i:usd|eur|gbp|dollars?|euros?|[gmt]b"
    r"|days?|hours?|requests? per (?:second|minute|hour|day)))(?!\w)"
)
_UNIT_ALIASES = {"$": "usd", "dollar": "usd", "€": "eur", "euro": "eur", "£": "gbp", "%": "percent"}
_PERIOD = re.compile(r"\b(?:(?P<month>month|monthly|mo)|(?P<year>year|yearly|annual|annually|yr))\b", re.IGNORECASE)
_CAPITALISED_RUN = re.compile(r"[A-Z][\w+-]*(?:[ \t]+[A-Z][\w+-]*)*")
# Words that name no particular thing: "The Pro plan" and "Pro" are the same subject.
_NOISE_WORDS = frozenset(
    "the a an our your its this that these those each every all it we you plan plans tier tiers edition package "
    "in on at for with and or of per usd eur gbp gb mb tb january february march april may june july august "
    "september october november december".split()
)
_TAIL_CHARS = 40  # how far after a number a "per month" / "per year" qualifier may sit


@dataclass(frozen=True, slots=True)
class _Quantity:
    """A number with a unit, attributed to the thing it describes in one source."""

    source: str
    subject: str
    unit: str
    amount: Decimal
    raw: str
    period: str | None  # "month" / "year" when stated, so $12/month is not compared with $120/year
    aspect: str | None  # table header ("price per user per month"); None in prose


_NAME_WORD = re.compile(r"[\w+-]+")


def _normalise(name: str) -> str:
    """Comparable subject key: lowercase, without filler words such as "the" or "plan"."""
    return " ".join(w for w in _NAME_WORD.findall(name.lower()) if w not in _NOISE_WORDS)


def names_subject(text: str, subject: str) -> bool:
    """Whether ``text`` names a conflict's ``subject``: each of its words, as a whole word.

    Words are cut as subjects are: "Pro" is named by "the Pro plan", not by "Max projects" or
    "pro-rated".
    """
    words = _name_words(text)
    return all(word in words for word in subject.split())


@lru_cache(maxsize=64)
def _name_words(text: str) -> frozenset[str]:
    """``text``'s words, once per text: one answer is checked against each of its conflicts."""
    return frozenset(_NAME_WORD.findall(text.lower()))


def _unit_class(unit: str) -> str:
    key = " ".join(unit.lower().split()).rstrip("s")
    return _UNIT_ALIASES.get(key, key)


def _period(text: str) -> str | None:
    match = _PERIOD.search(text)
    return None if match is None else ("month" if match["month"] else "year")


def _subject_before(text: str) -> str:
    """The salient named thing nearest before a number: its closest capitalised words."""
    for run in reversed(_CAPITALISED_RUN.findall(text)):
        if subject := _normalise(run):
            return subject
    return ""


def _scan(text: str, source: str, *, subject: str | None, header: str = "") -> Iterator[_Quantity]:
    """Quantities in one clause; `subject` is fixed for table cells, else found per number."""
    matches = list(_QUANTITY.finditer(text))
    for i, match in enumerate(matches):
        stop = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        tail = text[match.end() : min(stop, match.end() + _TAIL_CHARS)]
        about = subject if subject is not None else _subject_before(text[: match.start()])
        if not about:
            continue  # "it costs $15": without a subject there is nothing to compare it with
        yield _Quantity(
            source=source,
            subject=about,
            unit=_unit_class(match["symbol"] or match["unit"]),
            amount=Decimal((match["amount"] or match["value"]).replace(",", "")),
            raw=match.group().strip(),
            period=_period(f"{header} {tail}"),
            aspect=_normalise(header) or None,
        )


def _quantities(passage: SourcedText) -> Iterator[_Quantity]:
    """Quantities in a passage: table rows arrive as "Header: value; Header: value" lines."""
    for line in passage.text.splitlines():
        cells = [cell.partition(": ") for cell in line.split("; ")]
        if len(cells) > 1 and all(sep for _, sep, _ in cells):
            if row_subject := _normalise(cells[0][2]):  # a row is about its first column
                for header, _, value in cells[1:]:
                    yield from _scan(value, passage.source, subject=row_subject, header=header)
            continue
        for sentence in split_sentences(line):
            yield from _scan(sentence, passage.source, subject=None)


def _rivals(quantity: _Quantity, others: list[_Quantity]) -> list[_Quantity]:
    """The statements in another source that say the same kind of thing as `quantity`.

    Different stated periods or table headers rule a pair out; among the rest, the ones that
    match most specifically win, so a "$15 per month" is weighed against a monthly price and not
    against a one-off setup fee in the same row.
    """

    def fits(a: str | None, b: str | None) -> bool:
        return a is None or b is None or a == b

    def score(o: _Quantity) -> int:
        return (o.period is not None and o.period == quantity.period) + (
            o.aspect is not None and o.aspect == quantity.aspect
        )

    comparable = [o for o in others if fits(o.period, quantity.period) and fits(o.aspect, quantity.aspect)]
    best = max(map(score, comparable), default=0)
    return [o for o in comparable if score(o) == best]


def find_conflicts(passages: Sequence[SourcedText]) -> list[Conflict]:
    """Same subject and unit, different values, in different documents.

    A document may legitimately state several values (monthly and yearly, several plans), so a
    number only conflicts when the other document states comparable numbers and none agrees.
    """
    groups: dict[tuple[str, str], list[_Quantity]] = defaultdict(list)
    for passage in passages:
        for quantity in _quantities(passage):
            groups[(quantity.subject, quantity.unit)].append(quantity)

    conflicts: list[Conflict] = []
    for (subject, _unit), quantities in groups.items():
        involved: dict[str, dict[str, None]] = defaultdict(dict)  # source -> values, ordered set
        for quantity in quantities:
            for source in dict.fromkeys(q.source for q in quantities if q.source != quantity.source):
                rivals = _rivals(quantity, [q for q in quantities if q.source == source])
                if rivals and all(r.amount != quantity.amount for r in rivals):
                    involved[quantity.source][quantity.raw] = None
                    involved[source].update(dict.fromkeys(r.raw for r in rivals))
        if len(involved) > 1:
            conflicts.append(Conflict(subject, {src: list(vals) for src, vals in involved.items()}))
    return conflicts
