"""What a question asks (pure): the kind of answer it expects and the words it is about.

An extractive answer can only quote, so it must know what to look for before it chooses: "How
much does membership cost?" wants the sentence with the price, not the club's description;
"I get error SYNC-409, what should I do?" wants the fix, not the cause; "What port does the agent
listen on?" wants the configuration line. The rules are a handful of question shapes, in the
order a reader would apply them; anything else is ``OTHER`` and is answered by relevance alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from rag_common.text.words import NAME, REQUEST_WORDS, STOP_WORDS, content_words, names, stem, tokens


class AnswerType(StrEnum):
    """The kind of answer a question expects."""

    QUANTITY = "quantity"  # a price, an amount, a duration, a limit
    DATE = "date"
    ENTITY = "entity"  # a person or an organisation
    VALUE = "value"  # an address, port, version, command, path, header or setting name
    STEPS = "steps"  # "how do I ..." / "what should I do"
    REASON = "reason"
    YES_NO = "yes_no"
    LIST = "list"
    COMPARISON = "comparison"
    DEFINITION = "definition"
    OTHER = "other"


_VALUE_NOUNS = (
    r"port|address|url|endpoint|host|hostname|domain|path|folder|directory|file|filename|command|cli|"
    r"flag|option|setting|parameter|variable|env|environment variable|header|key|field|version|value|"
    r"name of the|syntax|format|extension|config|configuration|default"
)
_RULES: tuple[tuple[AnswerType, re.Pattern[str]], ...] = (
    # Not "compare-and-set", a name for one operation.
    (
        AnswerType.COMPARISON,
        re.compile(r"(?<![\w-])(difference|differ|compare|compared|comparison|versus|vs\.?)(?![\w-])"),
    ),
    (
        AnswerType.STEPS,
        re.compile(
            r"^(how (do|can|should|would) (i|we|you|one)\b|how to\b|what (should|do|can) (i|we) do\b)"
            r"|\b(steps?|what should i do|what do i do|how do i)\b"
        ),
    ),
    (AnswerType.REASON, re.compile(r"^(why\b|what (causes|caused)\b)|\b(reason|cause of)\b")),
    (
        AnswerType.QUANTITY,
        re.compile(
            r"\bhow (much|many|long|often|big|large|soon|fast|old|frequently)\b"
            r"|\b(price|prices|cost|costs|fee|fees|limit|limits|maximum|minimum|max|min|rate|percentage|"
            r"number of|amount|duration|size|uptime|quota)\b"
            # "What's the most historical values a bucket keeps?", "what's the largest payload?": a limit
            r"|\bwhat(?:'s| is) the (most(?! (common|popular|important|likely|recent|used|useful|secure)\b)|"
            r"largest|biggest|highest|longest|smallest|fewest|least|lowest|shortest)\b"
        ),
    ),
    (AnswerType.DATE, re.compile(r"^when\b|\b(what|which) (date|day|year|month|time)\b|\bdeadline\b")),
    (AnswerType.ENTITY, re.compile(r"^who\b|\b(which|what) (company|companies|person|team|vendor|provider)\b")),
    (AnswerType.VALUE, re.compile(rf"^where\b|\b(what|which)\b.*\b({_VALUE_NOUNS})s?\b")),
    (
        AnswerType.LIST,
        re.compile(
            r"\b(what|which) (are|were) (the|some|all)\b|\b(list|name) (all|the)\b|\bwhat kinds?\b"
            r"|^what (does|do) [\w\s-]{1,40} (include|includes|contain|contains|offer|offers|cover|covers)\??$"
        ),
    ),
    (
        AnswerType.DEFINITION,
        re.compile(r"^what (is|are|does) (a |an |the )?[\w\- ]{1,40}( mean)?\??$|^define\b|\bmeaning of\b"),
    ),
    (
        AnswerType.YES_NO,
        re.compile(r"^(is|are|can|could|does|do|did|will|would|should|has|have|was|were|may)\b"),
    ),
)


# The word a short wh-question turns on: "Who is the CEO", "How many employees", "Who founded...",
# "Where is X headquartered?", and whom "What discount do students get?" asks about. If no passage
# holds it, nothing answers. Not "Which plants...": the answer names plants without saying "plant".
_HEAD_RULES = (
    re.compile(r"^who (?:is|are|was|were) (?:the |a |an )?([a-z][\w-]*)"),
    # "Who founded Orbitly Labs?": a past deed is told with its verb ("founded by", "the founder");
    # not "Who keeps the otters?", answered by "the otter keeper", or "Who teaches...?" by "Instructor".
    re.compile(r"^who ([a-z]{3,}ed)\b"),
    re.compile(r"^how (?:many|much) (?!do\b|does\b|did\b|is\b|are\b|can\b|will\b)([a-z][\w-]*)"),
    # "Where is Orbitly Labs headquartered?": a place asked by the word for where it is.
    re.compile(r"^where (?:is|are|was|were) [\w\s-]+? (headquartered|located|based|registered|incorporated)\??$"),
    # "What discount do students get": the discount is asked for the students.
    re.compile(
        r"^(?:what|which) [a-z][\w-]* (?:do|does|did) "
        r"(?!i\b|we\b|you\b|they\b|it\b|people\b|folks\b|someone\b|everyone\b|anyone\b|most\b)([a-z][\w-]*)"
    ),
)


@dataclass(frozen=True, slots=True)
class Asked:
    """What one question asks: its answer type, its focus stems, the names it uses and the words it
    turns on (its heads; none when the question is not a short wh-question)."""

    question: str
    answer_type: AnswerType
    focus: frozenset[str]  # stems of the words the question is about
    names: frozenset[str]  # proper names and codes as written ("Teams", "SYNC-409")
    heads: tuple[str, ...] = ()


def analyse(question: str) -> Asked:
    """The answer type, focus, names and head word of a question."""
    text = " ".join(question.lower().split()).strip()
    answer_type = next((kind for kind, rule in _RULES if rule.search(text)), AnswerType.OTHER)
    asking = set(REQUEST_WORDS) | set(_HOW_WORD.findall(text))
    focus = frozenset(stem(w) for w in content_words(question) if w not in asking)
    heads = tuple(m.group(1) for rule in _HEAD_RULES if (m := rule.search(text)))
    heads = tuple(h for h in heads if h not in STOP_WORDS and h not in REQUEST_WORDS)
    return Asked(question, answer_type, focus, frozenset(names(question)), heads)


_HOW_WORD = re.compile(r"(?<=\bhow )(much|many|long|often|big|large|soon|fast|old|frequently)\b")


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` holds ``name`` as written (or its singular: "PDFs" -> "PDF")."""
    forms = {name, name[:-1]} if len(name) > 3 and name.endswith("s") else {name}
    return any(re.search(rf"(?<![\w-]){re.escape(form)}(?![\w-])", text) for form in forms)


def words_of(text: str) -> set[str]:
    """Lower-case tokens of a text, as ``names`` compares them (codes keep their hyphens)."""
    return {m.group().lower() for m in NAME.finditer(text)} | set(tokens(text))
