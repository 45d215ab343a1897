"""The surface shape of an exam option (pure): kind, unit, format and capitalisation.

A key shaped unlike its distractors gives itself away ("14-day" among "30 days",
"Free" among "the number of users"), so the generator picks distractors of the key's shape and the
scorecard checks that the four options of a question share one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty "
    "sixty hundred thousand million billion".split()
)
_NUMBER = re.compile(r"^\$?\d[\d,]*(?:\.\d+)?")
_CLI = frozenset(
    "nats nats-server nsc curl pip npm npx docker git kubectl python python3 uv make helm brew apt-get go cargo".split()
)
_OPTION_FLAG = re.compile(r"(?:^|\s)--?[A-Za-z][\w-]*")
_SETTING = re.compile(r"^(?:--?)?[a-z][a-z0-9]*(?:(?:[_.][a-z0-9]+)+|(?:[A-Z][a-z0-9]+)+)$")
# A clause an option can be: the reason or the means of a statement, opened by its connective.
CLAUSE_OPENERS = ("because", "to", "by", "so that")
MAX_LENGTH_RATIO = 3.0


@dataclass(frozen=True, slots=True)
class Shape:
    """An option's shape.

    ``kind``: money, percent, quantity, number, command, flag, setting, name, phrase, clause or statement;
    ``unit``: a quantity's unit word (singular) or a clause's connective; ``format``: how a number is
    written (digits, decimal, thousands, word; "-joined" for "14-day"); ``caps``: capital, lower or code.
    """

    kind: str
    unit: str = ""
    format: str = ""
    caps: str = ""


def _singular(word: str) -> str:
    word = word.lower()
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _number_format(text: str) -> str:
    match = _NUMBER.match(text.lstrip("$"))
    if not match:
        return "word"
    digits = match.group(0)
    return "decimal" if "." in digits else "thousands" if "," in digits else "digits"


def shape_of(text: str) -> Shape:
    """The option's shape (see ``Shape``)."""
    t = " ".join(text.split())
    words = t.split()
    if not words:
        return Shape("empty")
    first = words[0]
    lower_first = first.lower()
    if re.search(r"[$€£]\s?\d", t):
        return Shape("money", format=_number_format(t.lstrip("$€£ ")))
    if re.search(r"\d\s?%|\bpercent\b", t):
        return Shape("percent", format=_number_format(t))
    if _NUMBER.match(t) or lower_first.split("-")[0] in NUMBER_WORDS:
        joined = re.match(r"^[\d.,]+-[A-Za-z]", t) or (lower_first in NUMBER_WORDS and "-" in first)
        unit = re.findall(r"[A-Za-z]+", t.split("-", 1)[1] if joined else " ".join(words[1:]))
        fmt = _number_format(t) + ("-joined" if joined else "")
        if unit:
            return Shape("quantity", unit=_singular(unit[-1] if not joined else unit[0]), format=fmt)
        return Shape("number", format=fmt)
    if first in _CLI or (len(words) > 1 and _OPTION_FLAG.search(t) and first.islower()):
        return Shape("command", caps="code")
    if len(words) == 1 and first.startswith("-"):
        return Shape("flag", caps="code")
    if len(words) == 1 and _SETTING.match(first):
        return Shape("setting", caps="code")
    for opener in CLAUSE_OPENERS:
        if t.lower().startswith(opener + " ") and len(words) >= 3:
            return Shape("clause", unit=opener, caps="lower")
    caps = "capital" if first[:1].isupper() else "lower"
    if len(words) >= 6:
        return Shape("statement", caps=caps)
    if any(w[:1].isupper() for w in words):
        return Shape("name", caps=caps)
    return Shape("phrase", caps=caps)


def same_shape(a: Shape, b: Shape) -> bool:
    """Two options of one shape: the same kind, unit, number format and capitalisation.

    A name and a phrase are both terms; what counts between them is the capital letter.
    """
    terms = {"name", "phrase"}
    if a.kind in terms and b.kind in terms:
        return a.caps == b.caps
    return a == b


def length_ratio(options: Sequence[str]) -> float:
    """The longest option's length over the shortest's (characters)."""
    lengths = [len(o.strip()) for o in options if o.strip()]
    return max(lengths) / min(lengths) if lengths else 1.0


def shape_mismatch(options: Sequence[str]) -> str | None:
    """Why the options are not of one shape, or None."""
    shapes = [shape_of(o) for o in options]
    for option, shape in zip(options[1:], shapes[1:], strict=True):
        if not same_shape(shapes[0], shape):
            return f"{options[0]!r} ({shapes[0].kind}) and {option!r} ({shape.kind}) differ in shape"
    ratio = length_ratio(options)
    if ratio > MAX_LENGTH_RATIO:
        return f"option lengths differ {ratio:.1f}x"
    return None
