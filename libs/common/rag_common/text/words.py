"""Words of a text (pure): lower-case tokens, their Snowball stems and one stop-word list.

The stemmer is the Snowball English stemmer of ``py_rust_stemmers``, the one fastembed's BM25
already uses for the sparse vectors, so "costs"/"cost" and "integrations"/"integrate" meet in
the extractive answer's scoring exactly as they meet in retrieval.
"""

from __future__ import annotations

import re
from functools import lru_cache

from py_rust_stemmers import SnowballStemmer

# Words and numbers; a decimal ("99.9", "4.2") or a version stays one token.
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")

# Function words of questions and prose: they say nothing about what is asked or what a passage
# is about. One list for the answer engine, the evaluator and the offline metrics.
STOP_WORDS = frozenset(
    "a an and are as at be been being by can could do does did doing done for from has have had having how "
    "i if in is it its itself me my of on or our ours please should tell the this that these those to was "
    "were we what when where which who whom whose why will with would you your yours there their theirs them "
    "they about into than then so any some much many get gets got us use used using need want know not no "
    "also just only very more most such other each both all may might must shall here s t don doesn isn "
    "aren wasn weren won ve re ll d m".split()
)

_STEMMER = SnowballStemmer("english")


def tokens(text: str) -> list[str]:
    """Lower-case word and number tokens, in order."""
    return _TOKEN.findall(text.lower())


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """The Snowball stem of one lower-case word ("pricing" -> "price", "integrations" -> "integr")."""
    return str(_STEMMER.stem_word(word))


def content_words(text: str) -> list[str]:
    """Tokens that carry content: stop words out, single letters out (digits kept)."""
    return [w for w in tokens(text) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]


def terms(text: str) -> set[str]:
    """The stems of a text's content words: what a question and a sentence are compared by."""
    return {stem(w) for w in content_words(text)}
