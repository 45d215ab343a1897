"""When to refuse: a relevance threshold calibrated per collection, and a lexical check (pure).

A fixed cosine threshold cannot serve every corpus: on a technical corpus full of install
commands and API terms, an unrelated question ("What is Apple's stock price?") still lands at a
cosine that would pass on a small product FAQ. So each collection's threshold is measured on the
collection itself: a fixed set of questions no team document answers (weather, recipes, sports,
share prices...) is searched against it, and the threshold sits just above what those unrelated
questions score there. A question whose salient words appear in none of the best passages must
clear a higher bar still.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from wordfreq import zipf_frequency

from rag_common.text.words import (
    INDEX_STOP_WORDS,
    QUESTION_WORDS,
    REQUEST_WORDS,
    STOP_WORDS,
    content_words,
    names,
    stem,
    tokens,
)

# Questions no team's documents answer; their best scores in a collection are its noise floor.
OFF_TOPIC_PROBES = (
    "What is the capital of Australia?",
    "Can you give me a recipe for banana bread?",
    "Who won the football World Cup in 2018?",
    "How do I change the oil in my car?",
    "What will the weather be like in Paris tomorrow?",
    "What is Apple's stock price today?",
    "Should I buy Tesla shares?",
    "Who wrote Pride and Prejudice?",
    "How tall is Mount Everest?",
    "What is the best way to lose weight quickly?",
    "Recommend a good movie to watch tonight.",
    "How many calories are in an avocado?",
    "What time does the supermarket close on Sunday?",
    "Translate 'good morning' into Japanese.",
    "Who is the president of France?",
    "How do I train my puppy to sit?",
    "What are the symptoms of the flu?",
    "When did World War II end?",
    "What is the square root of 144?",
    "Which team won the NBA finals last year?",
    "How do I grow tomatoes on a balcony?",
    "What's a good name for a cat?",
    "How far is the Moon from the Earth?",
    "Tell me a joke about penguins.",
    "What is the exchange rate from euros to yen?",
    "How do I fix a leaking kitchen tap?",
    "What should I pack for a beach holiday?",
    "Who painted the Mona Lisa?",
    "What is the plot of Hamlet?",
    "How long should I boil an egg?",
)

# Words that say what kind of question it is, not what it is about: the stop words of both lists,
# question and request words, and generic words ("best", "price", "today") that a passage answering
# the question need not contain.
_GENERIC = (
    STOP_WORDS
    | INDEX_STOP_WORDS
    | QUESTION_WORDS
    | REQUEST_WORDS
    | frozenset(
        """answer best cost costs good help made make new price prices question really time times today tomorrow
        work works yesterday""".split()
    )
)


@dataclass(frozen=True, slots=True)
class Calibration:
    """A collection's threshold and the off-topic scores it was derived from."""

    threshold: float
    noise_p90: float
    noise_max: float
    probes: int


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def calibrate(off_topic_best: Sequence[float], *, floor: float, margin: float, ceiling: float) -> Calibration:
    """Threshold just above the collection's noise: the 90th percentile of off-topic scores plus a margin.

    ``floor`` keeps a tiny or empty collection from accepting everything; ``ceiling`` keeps a
    collection whose every passage resembles everything from refusing everything.
    """
    if not off_topic_best:
        return Calibration(threshold=floor, noise_p90=0.0, noise_max=0.0, probes=0)
    p90 = quantile(off_topic_best, 0.9)
    threshold = min(max(floor, p90 + margin), ceiling)
    return Calibration(round(threshold, 4), round(p90, 4), round(max(off_topic_best), 4), len(off_topic_best))


def salient_terms(question: str) -> list[str]:
    """Words of the question that name what it is about (stop and question words out)."""
    return list(dict.fromkeys(w for w in tokens(question) if w not in _GENERIC and len(w) > 2))


def lexical_coverage(question: str, texts: Sequence[str]) -> tuple[float, list[str]]:
    """Share of the question's salient terms found in ``texts`` (Snowball stem match), and the missing ones."""
    terms = salient_terms(question)
    if not terms:
        return 1.0, []
    found = {stem(w) for text in texts for w in tokens(text)}
    missing = [t for t in terms if stem(t) not in found]
    return 1 - len(missing) / len(terms), missing


@dataclass(frozen=True, slots=True)
class Verdict:
    refused: bool
    reason: str | None
    low_confidence: bool


def judge(
    question: str,
    best_similarity: float,
    texts: Sequence[str],
    threshold: float,
    *,
    lexical_margin: float,
    min_coverage: float,
    confident_margin: float,
) -> Verdict:
    """Refuse below the threshold; in the band just above it, refuse when the passages share too few of
    the question's salient words. ``low_confidence`` marks answers that passed by a small margin."""
    if best_similarity < threshold:
        return Verdict(
            True,
            f"no passage is similar enough to the question (best {best_similarity:.2f} < "
            f"{threshold:.2f}, this collection's threshold)",
            False,
        )
    coverage, missing = lexical_coverage(question, texts)
    if best_similarity < threshold + lexical_margin and coverage < min_coverage:
        return Verdict(
            True,
            f"the passages do not mention {', '.join(repr(m) for m in missing[:5])} "
            f"(best similarity {best_similarity:.2f})",
            False,
        )
    low = best_similarity < threshold + confident_margin or coverage < min_coverage
    return Verdict(False, None, low)


def _weak(name: str) -> bool:
    """An all-capitals code or a short word ("URL", "CLI", "Go"): as often context as subject."""
    return len(name) < 3 or name.isupper() or any(c.isdigit() for c in name)


TYPO_SIMILARITY = 0.8  # difflib ratio at which a name is taken for a misspelling of one the texts hold


def absent_names(question: str, texts: Sequence[str]) -> list[str]:
    """The proper names and codes of the question that none of ``texts`` holds, as written; a
    misspelt name ("Northwind Helth") is the name the texts hold, not an absent one."""
    joined = " ".join(texts)
    held = joined.lower()
    written = set(re.findall(r"\b[A-Z][\w-]+", joined))
    return sorted(
        n
        for n in names(question)
        if n.lower() not in held and not difflib.get_close_matches(n, written, n=1, cutoff=TYPO_SIMILARITY)
    )


def unknown_names_reason(unknown: Sequence[str]) -> str | None:
    """Why a question about names the collection never mentions is refused (None: it is not).

    One capitalised name the documents never write ("Keycloak", "Helm") means they do not cover
    what was asked; an all-capitals code or a short word alone may be written out in them
    ("OCSP", "URL"), so it takes two.
    """
    strong = [n for n in unknown if not _weak(n)]
    if strong or len(unknown) >= 2:
        return f"the documents never mention {', '.join(unknown)}"
    return None


# A word rarer than this in general English (wordfreq's Zipf scale: 3 is once per million words;
# "systemd" 2.2, "stapling" 2.2, "ldap" 2.2, against "laptop" 4.2 and "probe" 4.0) names a
# technical thing: a question that turns on one the whole collection never writes asks about
# something its documents do not cover ("a systemd unit file for nats-server").
RARE_ZIPF = 3.0
MIN_RARE_LETTERS = 4


def absent_rare_words(question: str, texts: Sequence[str]) -> list[str]:
    """The question's rare words (``RARE_ZIPF``) that none of ``texts`` holds in any form: not as
    written, not by stem, and not as a likely misspelling of one of their words ("servises")."""
    joined = " ".join(texts).lower()
    held = set(re.findall(r"[a-z][a-z0-9]*", joined))
    stems = {stem(w) for w in held}
    rare: list[str] = []
    for word in dict.fromkeys(w.lower() for w in content_words(question)):
        parts = [x for x in re.split(r"[-_./']", word) if x]
        if len(word) < MIN_RARE_LETTERS or any(c.isdigit() for c in word) or word in _GENERIC:
            continue
        if max(zipf_frequency(spelling, "en") for spelling in _spellings(word)) >= RARE_ZIPF:
            continue
        if word in joined or all(x in held or stem(x) in stems for x in parts):
            continue
        # A misspelling ("servises", "hearin"), not a held word with more to it ("systemd").
        if any(not word.startswith(c) for c in difflib.get_close_matches(word, held, n=3, cutoff=TYPO_SIMILARITY)):
            continue
        rare.append(word)
    return rare


_BRITISH = ((re.compile(r"is(e|es|ed|ing|ation|ations)$"), r"iz\1"), (re.compile(r"ys(e|es|ed|ing)$"), r"yz\1"))


def _spellings(word: str) -> list[str]:
    """The word and its American spelling: "summarise" is as common as "summarize" (a corpus counts
    the two apart, and the rarer one alone would read as a rare term)."""
    return [word, *(pattern.sub(us, word) for pattern, us in _BRITISH if pattern.search(word))]


def unknown_words_reason(unknown: Sequence[str]) -> str | None:
    """Why a question turning on rare words the collection never writes is refused (None: it is not)."""
    return f"the documents never mention {', '.join(unknown)}" if unknown else None
