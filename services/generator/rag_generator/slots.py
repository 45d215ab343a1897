"""The slot a question asks to fill, and whether a unit of text fills it (pure).

"Which port does the leafnode listener use?" is answered by a unit that holds a number;
"what URL path gives me JetStream stats?" by one that holds a path; "how do I get a bcrypt
hash?" by a command. A unit that repeats the question's words without the slot's kind of token
("The server supports bcrypt") does not answer it, however similar it reads. So the extractive
answer leads with a unit that fills the slot, and a question whose slot no passage fills near
its focus is refused: the documents talk about the subject but do not say what was asked.

The rules are data: each slot is the question shapes that ask for it and the tokens that fill it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from rag_common.text.quotable import KIND_CODE, Candidate


class Slot(StrEnum):
    """The kind of token a question asks for."""

    NUMBER = "number"  # a number with a unit: a port, a size, a duration, a count
    PATH = "path"  # a path, an endpoint, a URL, a subject or a topic
    COMMAND = "command"  # a command, a flag or a configuration key
    NONE = "none"  # a name, yes/no, steps, a comparison, a reason: no token type decides


@dataclass(frozen=True, slots=True)
class SlotRule:
    """A slot: the question shapes that ask for it, and the tokens that fill it."""

    slot: Slot
    asks: re.Pattern[str]  # over the lower-cased question
    fills: re.Pattern[str]  # over a unit's text as written
    # Whether a line of code fills the slot by being code (a command, a configuration line).
    code_fills: bool = False
    # The question shapes for which no unit filling the slot near the question's focus means the
    # documents do not answer: "how many ...?", "which port ...?" (a number or a path is written
    # as one); None: never (a command is often only described in prose, and "the size of the
    # context window" in a question asks for no number).
    decides: re.Pattern[str] | None = None


SLOT_RULES: tuple[SlotRule, ...] = (
    SlotRule(
        Slot.PATH,
        re.compile(r"\b(what|which)\s+(?:[\w-]+\s+){0,2}?(url|uri|path|endpoint|subject|topic|route)s?\b"),
        re.compile(
            r"(?<![\w.])/[a-z][\w.{}-]*|https?://\S+|\$?[A-Z][A-Z0-9_]*(?:\.[\w>*$-]+){1,}|\b[a-z]+(?:\.[a-z*>]+){2,}"
        ),
        decides=re.compile(r"^(what|which)\s+(?:[\w-]+\s+){0,2}?(url|uri|path|endpoint|subject|topic)s?\b"),
    ),
    SlotRule(
        Slot.NUMBER,
        re.compile(
            r"\bport\b|\bhow (many|much|long|big|large|often|far)\b|\b(size|limit|timeout|interval|duration|"
            r"maximum|minimum|largest|smallest|biggest|number of|count|bytes?|megabytes?|seconds?|minutes?|hours)\b"
        ),
        re.compile(
            r"\b\d[\d,.]*\s*(?:[kmgt]i?b|bytes?|ms|[smhd]|secs?|seconds?|minutes?|hours?|days?|%)?(?![\w.])"
            r"|\b(zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
            r"fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen|half|quarter|twice|double|"
            r"percent|unlimited|none)\b",
            re.IGNORECASE,
        ),
        decides=re.compile(r"^(how (many|much|long)\b|(what|which) (port|size|limit|timeout)\b)"),
    ),
    SlotRule(
        Slot.COMMAND,
        re.compile(
            r"\b(command|commands|cli|flag|flags|option|setting|config(uration)? (key|option|setting|field)|"
            r"property|parameter|environment variable|env var|variable)\b"
        ),
        re.compile(r"`[^`]+`|(?<![\w-])--?[a-z][\w-]+|\b[a-z]+_[a-z_]+\b|\bnats(?:-server)? [a-z]+\b"),
        code_fills=True,
    ),
)


SLOT_WORDS = {Slot.NUMBER: "number", Slot.PATH: "path or subject", Slot.COMMAND: "command or setting", Slot.NONE: ""}


def asked_slot(question: str) -> SlotRule | None:
    """The slot a question asks to fill, or None (a name, yes/no, a reason...: no token type decides)."""
    text = " ".join(question.lower().split())
    return next((rule for rule in SLOT_RULES if rule.asks.search(text)), None)


def fills(unit: Candidate, rule: SlotRule) -> bool:
    """Whether a unit holds a token of the slot's kind."""
    if rule.code_fills and unit.kind == KIND_CODE:
        return True
    return bool(rule.fills.search(unit.text))


def decides(rule: SlotRule, question: str) -> bool:
    """Whether a question of this shape is unanswered when no unit near its focus fills the slot."""
    return rule.decides is not None and bool(rule.decides.search(" ".join(question.lower().split())))
