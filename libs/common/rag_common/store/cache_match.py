"""Whether a kept question may answer a new one: what the answer cache compares besides the cosine (pure).

MiniLM puts a question and its opposite within a few hundredths of each other: "Which plan
includes SSO?" / "Which plan does not include SSO?" 0.97, "... more than $12?" / "... less than
$12?" 0.98, "... above the Free limit?" / "... below ..." 0.996. No threshold tells them apart, so
a kept question serves a new one only when, besides the cosine, the two agree on:

- **anchors** (``same_anchors``): every number and capitalised name of each appears in the other
  ("Pro" never serves "Business", "10 users" never "20 users");
- **sense** (``Sense``): the features an embedding barely weighs, read from the words by the
  tables below, whatever the case:

  - *polarity*: how many negations ("not", "n't", "no", "never", "without", "except", "lacks",
    "excludes", "turn off", ...);
  - *degree*: comparatives and superlatives as (grade, axis, direction), so "fewest" is not
    "most", "cheaper" is "less expensive", "largest" is "maximum"; "before" / "after",
    "above" / "below", "at least" / "at most";
  - *qualifiers*: regions ("eu", "us", "apac"), periods ("monthly", "per year"), plans, platforms
    and products, "all" / "only", number words, dates, and the word naming a plan, tier, region or
    integration ("the pro plan");

  these must be equal. Opposite *poles* ("create" / "delete", "expensive" / "cheap", "new" /
  "old") and a prefix that negates a word of the other question ("unavailable" / "available",
  "disallow" / "allow") part two questions only when both speak of that axis, so "How do I create
  a new project?" still meets "How do I create a project?".

A miss costs a retrieval; a wrong hit serves another question's answer. Where in doubt the rules
keep two questions apart. Measured in docs/decisions/0300-decisions-in-force.md. The word lists
are data: a new form is a word in a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from rag_common.text.sentences import clauses
from rag_common.text.words import QUESTION_WORDS, STOP_WORDS, stem, words

# --- the tables (data) ------------------------------------------------------------------------------

# Negations, by their Snowball stem (so "lacks", "lacking" and "lacked" are one entry); a word
# ending in "n't" is one too, and "off" / "out" after a phrasal verb ("turn off", "opt out").
NEGATIONS = frozenset(
    stem(w)
    for w in """not no never without except excluding exclude lack missing none neither nor nothing nobody
    cannot unless unable fail disable disallow unavailable unsupported omit dont doesnt didnt isnt arent
    wasnt werent cant wont shouldnt wouldnt couldnt hasnt havent hadnt""".split()
)
PHRASAL_VERBS = frozenset(
    "turn turns turned turning switch switched opt opts opted log logs logged sign signed".split()
)

# Gradable adjectives: axis and direction. The base form alone is a pole (compared only with a
# question on the same axis); its comparative or superlative, or the base after "more" / "most" /
# "less" / "least", is a degree every matching question must share.
GRADABLE: Mapping[str, tuple[str, int]] = {
    **dict.fromkeys("many much large big great high".split(), ("amount", 1)),
    **dict.fromkeys("few little small low".split(), ("amount", -1)),
    **dict.fromkeys("expensive costly pricey".split(), ("price", 1)),
    **dict.fromkeys("cheap affordable inexpensive".split(), ("price", -1)),
    **dict.fromkeys("late new recent".split(), ("time", 1)),
    **dict.fromkeys("early old".split(), ("time", -1)),
    **dict.fromkeys("long".split(), ("length", 1)),
    **dict.fromkeys("short".split(), ("length", -1)),
    **dict.fromkeys("fast quick".split(), ("speed", 1)),
    **dict.fromkeys("slow".split(), ("speed", -1)),
    **dict.fromkeys("strong secure safe".split(), ("strength", 1)),
    **dict.fromkeys("weak".split(), ("strength", -1)),
    **dict.fromkeys("good".split(), ("quality", 1)),
    **dict.fromkeys("bad poor".split(), ("quality", -1)),
    **dict.fromkeys("easy simple".split(), ("ease", 1)),
    **dict.fromkeys("hard difficult complex".split(), ("ease", -1)),
    **dict.fromkeys("far".split(), ("distance", 1)),
    **dict.fromkeys("near".split(), ("distance", -1)),
    **dict.fromkeys("wide heavy".split(), ("width", 1)),
    **dict.fromkeys("narrow light".split(), ("width", -1)),
}
# Words that are a degree by themselves: grade, axis, direction.
DEGREES: Mapping[str, tuple[str, str, int]] = {
    **dict.fromkeys("more".split(), ("cmp", "amount", 1)),
    **dict.fromkeys("most maximum max top".split(), ("sup", "amount", 1)),
    **dict.fromkeys("less fewer".split(), ("cmp", "amount", -1)),
    **dict.fromkeys("least fewest minimum min".split(), ("sup", "amount", -1)),
    **dict.fromkeys("better".split(), ("cmp", "quality", 1)),
    **dict.fromkeys("best".split(), ("sup", "quality", 1)),
    **dict.fromkeys("worse".split(), ("cmp", "quality", -1)),
    **dict.fromkeys("worst".split(), ("sup", "quality", -1)),
    **dict.fromkeys("further farther".split(), ("cmp", "distance", 1)),
    **dict.fromkeys("furthest farthest".split(), ("sup", "distance", 1)),
    **dict.fromkeys("after since later next".split(), ("cmp", "time", 1)),
    **dict.fromkeys("before prior until earlier previous".split(), ("cmp", "time", -1)),
    **dict.fromkeys("last latest newest".split(), ("sup", "time", 1)),
    **dict.fromkeys("first earliest oldest".split(), ("sup", "time", -1)),
    **dict.fromkeys("above over exceeding exceeds exceed beyond".split(), ("cmp", "amount", 1)),
    **dict.fromkeys("below under".split(), ("cmp", "amount", -1)),
}
# A word that turns the gradable adjective after it into a degree: its grade and what it does to
# the adjective's direction ("less expensive" is "cheaper").
MODIFIERS: Mapping[str, tuple[str, int]] = {
    "more": ("cmp", 1),
    "most": ("sup", 1),
    "less": ("cmp", -1),
    "least": ("sup", -1),
}

# Degrees that are also a verb or an adverb at the end of a clause or before a preposition: "how
# long does the trial last?", "when the trial is over".
DEGREES_BEFORE_A_WORD = frozenset("last over".split())
PREPOSITIONS = frozenset("on in at for with to from by of".split())

# Two-word qualifiers, read before single words.
PHRASES: Mapping[str, str] = {
    "at least": "bound:min",
    "at most": "bound:max",
    "up to": "bound:max",
    "no more": "bound:max",
    "other than": "not",
    "apart from": "not",
    "united states": "region:us",
    "north america": "region:us",
    "united kingdom": "region:uk",
    "great britain": "region:uk",
    "asia pacific": "region:apac",
}
# Qualifiers by kind; each word gives "kind:value" (the canonical value after "=").
QUALIFIERS: Mapping[str, str] = {
    "region": "eu europe=eu european=eu emea us usa=us america=us american=us uk britain=uk british=uk gb=uk "
    "apac asia=apac asia-pacific=apac latam au australia=au australian=au canada canadian=canada "
    "germany german=germany france french=france japan japanese=japan india indian=india singapore brazil",
    "period": "hourly=hour daily=day weekly=week monthly=month quarterly=quarter yearly=year annual=year annually=year",
    "plan": "free pro professional=pro business enterprise starter premium",
    "platform": "windows linux macos mac=macos ios android ipad iphone web desktop mobile chrome firefox safari",
    "environment": "production prod=production staging sandbox",
    "product": "slack teams github gitlab jira asana trello zapier google outlook salesforce okta zoom dropbox "
    "notion figma",
    "quantifier": "all every=all only solely=only exclusively=only",
    "number": "two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred "
    "thousand million billion half twice double triple dozen",
    "date": "january february march april june july august september october november december monday "
    "tuesday wednesday thursday friday saturday sunday weekend",
}
# A period's unit after one of these words: "per month", "a year", "every week".
UNITS = frozenset("second minute hour day week month quarter year".split())
PER = frozenset("per a an each every".split())
# "us" after these is the pronoun, not the region ("contact us", "let us").
US_PRONOUN_AFTER = frozenset(
    "let lets tell help contact give send show email call allow allows join ask with to".split()
)
# A word before one of these names a thing of that kind ("the pro plan", "the gitlab integration").
HEADS = frozenset(
    """plan plans tier tiers edition editions version versions region regions environment environments app apps
    integration integrations platform platforms package packages subscription subscriptions license licenses
    datacenter datacenters""".split()
)
# Opposite actions, by stem: (axis, direction). "enable" / "disable" is a negation above.
OPPOSITES: Mapping[str, tuple[str, int]] = {
    stem(word): (axis, sign)
    for axis, positive, negative in (
        ("exist", "create add make install", "delete remove drop destroy erase uninstall"),
        ("transfer", "upload import send", "download export receive"),
        ("run", "start resume open", "stop pause close end"),
        ("size", "increase raise extend expand", "decrease reduce lower shrink"),
        ("tier", "upgrade", "downgrade"),
        ("cipher", "encrypt", "decrypt"),
        ("access", "allow grant accept approve permit", "block deny revoke reject forbid prohibit"),
        ("visibility", "show public", "hide private"),
        ("side", "internal inbound", "external outbound"),
        ("membership", "join subscribe", "leave"),
    )
    for sign, group in ((1, positive), (-1, negative))
    for word in group.split()
}
# Prefixes that negate the word they open: "unavailable" against "available".
NEGATING_PREFIXES = ("un", "dis", "non", "in", "im", "de")


def _qualifier_table() -> dict[str, str]:
    table = {}
    for kind, entries in QUALIFIERS.items():
        for entry in entries.split():
            word, _, value = entry.partition("=")
            table[word] = f"{kind}:{value or word}"
    return table


QUALIFIER_OF: Mapping[str, str] = _qualifier_table()


# --- anchors ----------------------------------------------------------------------------------------


def anchors(text: str) -> set[str]:
    """The words that pin what a question asks about, case-folded.

    Numbers, and words with a capital anywhere other than as a clause's first word (plan, product
    and feature names: "Pro", "SSO", "EU", and "iOS" too, which ``words.names`` does not count: a
    wrong cached answer costs more than a miss).
    """
    found: set[str] = set()
    for clause in clauses(text):
        for i, word in enumerate(words(clause)):
            if any(c.isdigit() for c in word) or (i > 0 and any(c.isupper() for c in word) and word != "I"):
                found.add(word.casefold())
    return found


@lru_cache(maxsize=4096)
def _anchored(question: str) -> tuple[frozenset[str], frozenset[str]]:
    """A question's anchors and words, case-folded, a qualifier as its canonical value ("europe": "region:eu")."""
    return (
        frozenset(QUALIFIER_OF.get(w, w) for w in anchors(question)),
        frozenset(QUALIFIER_OF.get(w.casefold(), w.casefold()) for w in words(question)),
    )


def same_anchors(a: str, b: str) -> bool:
    """Whether every anchor of each question appears among the other's words.

    So "the pro plan" matches "the Pro plan", and "EU" matches "europe" (one qualifier), but "Pro"
    never matches "Business", nor "10 users" "20 users".
    """
    (anchors_a, words_a), (anchors_b, words_b) = _anchored(a), _anchored(b)
    return anchors_a <= words_b and anchors_b <= words_a


# --- sense ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sense:
    """What a question means beyond its topic, as two matching questions must share it.

    ``features`` must be equal; ``poles`` conflict only on an axis both questions have.
    """

    features: frozenset[str]
    poles: frozenset[tuple[str, int]]
    # The words, case-folded, and their stems: a negating prefix against the other question's words.
    words: frozenset[str]
    stems: frozenset[str]


def _degree_of(word: str) -> tuple[str, str, int] | None:
    """The degree of a comparative or superlative of a gradable adjective ("cheaper", "biggest", "earliest")."""
    if word in DEGREES:
        return DEGREES[word]
    for suffix, grade in (("est", "sup"), ("er", "cmp")):
        if not word.endswith(suffix):
            continue
        root = word[: -len(suffix)]
        candidates = [root, root + "e"]
        if len(root) > 2 and root[-1] == root[-2]:
            candidates.append(root[:-1])  # "bigger"
        if root.endswith("i"):
            candidates.append(root[:-1] + "y")  # "earlier", "easiest"
        for base in candidates:
            if base in GRADABLE:
                axis, sign = GRADABLE[base]
                return grade, axis, sign
    return None


@dataclass(frozen=True)
class _Reading:
    """What one word says, with its neighbours: a negation, a feature, a pole, or nothing."""

    negation: bool = False
    feature: str | None = None
    pole: tuple[str, int] | None = None
    width: int = 1  # 2 when the next word was read with it ("at least", "less expensive")


NOTHING = _Reading()


def _reading(word: str, before: str, after: str) -> _Reading:
    """What ``word`` says between ``before`` and ``after`` (the empty string at either end)."""
    phrase = PHRASES.get(f"{word} {after}")
    if phrase is not None:
        return _Reading(negation=True, width=2) if phrase == "not" else _Reading(feature=phrase, width=2)
    if word.endswith("n't") or stem(word) in NEGATIONS or (word in ("off", "out") and before in PHRASAL_VERBS):
        return _Reading(negation=True)
    if word in MODIFIERS and after in GRADABLE:
        (grade, flip), (axis, sign) = MODIFIERS[word], GRADABLE[after]
        return _Reading(feature=f"{grade}:{axis}{sign * flip:+d}", width=2)
    if (degree := _degree_of(word)) is not None:
        if word in DEGREES_BEFORE_A_WORD and (not after or after in PREPOSITIONS):
            return NOTHING
        grade, axis, sign = degree
        return _Reading(feature=f"{grade}:{axis}{sign:+d}")
    if word in GRADABLE:
        # "how long", "how much": a measure asked for, not a direction
        return NOTHING if before == "how" else _Reading(pole=GRADABLE[word])
    if word in QUALIFIER_OF and not (word == "us" and before in US_PRONOUN_AFTER):
        return _Reading(feature=QUALIFIER_OF[word])
    if before in PER and word.rstrip("s") in UNITS:
        return _Reading(feature=f"period:{word.rstrip('s')}")
    if stem(word) in OPPOSITES:
        return _Reading(pole=OPPOSITES[stem(word)])
    # A word before "plan", "region", "integration" names one; a number is an anchor already.
    if after in HEADS and word not in STOP_WORDS | QUESTION_WORDS and not any(c.isdigit() for c in word):
        return _Reading(feature=f"name:{word}")
    return NOTHING


@lru_cache(maxsize=4096)
def sense(question: str) -> Sense:
    """A question's polarity, degrees, qualifiers and poles, read from its words whatever their case."""
    folded = [w.casefold().replace("’", "'") for w in words(question)]
    features: list[str] = []
    poles: set[tuple[str, int]] = set()
    negations = 0
    i = 0
    while i < len(folded):
        reading = _reading(folded[i], folded[i - 1] if i else "", folded[i + 1] if i + 1 < len(folded) else "")
        negations += reading.negation
        if reading.feature is not None:
            features.append(reading.feature)
        if reading.pole is not None:
            poles.add(reading.pole)
        i += reading.width
    if negations:
        features.append(f"not:{negations}")
    return Sense(frozenset(features), frozenset(poles), frozenset(folded), frozenset(stem(w) for w in folded))


def _opposed(a: Sense, b: Sense) -> bool:
    """Whether the two questions take other poles of an axis both speak of, or one negates a word of the other."""
    for axis in {axis for axis, _ in a.poles} & {axis for axis, _ in b.poles}:
        if {sign for x, sign in a.poles if x == axis} != {sign for x, sign in b.poles if x == axis}:
            return True
    for mine, theirs in ((a, b), (b, a)):
        for word in mine.words - theirs.words:
            for prefix in NEGATING_PREFIXES:
                rest = word[len(prefix) :]
                if not word.startswith(prefix) or len(rest) < 3 or rest in STOP_WORDS:
                    continue
                if stem(rest) in theirs.stems and stem(rest) not in mine.stems:
                    return True
    return False


def same_sense(a: str, b: str) -> bool:
    """Whether two questions agree on polarity, degrees and qualifiers, and take no opposite poles."""
    sense_a, sense_b = sense(a), sense(b)
    return sense_a.features == sense_b.features and not _opposed(sense_a, sense_b)


def may_serve(kept: str, asked: str) -> bool:
    """Whether the answer kept for ``kept`` may serve ``asked``, their cosine aside: same anchors, same sense."""
    return same_anchors(kept, asked) and same_sense(kept, asked)
