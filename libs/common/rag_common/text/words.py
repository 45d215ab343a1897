"""Words of a text (pure): how every service cuts a text into words, stems them and skips stop words.

The stemmer is the Snowball English stemmer of ``py_rust_stemmers``, the one fastembed's BM25
already uses for the sparse vectors, so "costs"/"cost" and "integrations"/"integrate" meet in
the extractive answer's scoring, the evaluator's grounding check and the retriever's relevance
check exactly as they meet in retrieval.

Three ways to cut words, each for one purpose:

- ``tokens``: lower-case words and numbers, what texts are compared by (with ``stem``);
- ``words``: words as written, case and inner apostrophes, hyphens and dots kept ("Sev1",
  "don't", "sign-on", "v2.1", "C++"), for rules that read capitals or phrases;
- ``WORD_RUN``: runs of word characters, what "repeats n words of that text" counts.

Two stop-word lists, for two purposes: ``STOP_WORDS`` (function words of questions and prose,
left out wherever texts are compared) and ``INDEX_STOP_WORDS`` (the sparse index's, which every
stored BM25 vector was made with). ``QUESTION_WORDS`` open a question and ``REQUEST_WORDS`` ask
for its answer; neither names what it is about.
"""

from __future__ import annotations

import re
from functools import lru_cache

from py_rust_stemmers import SnowballStemmer

from rag_common.text.sentences import opens_clause

# Words and numbers; a decimal ("99.9", "4.2") or a version stays one token.
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
# A word as written: letters and digits, joined by apostrophes, hyphens, dots or plus signs inside
# it, never ending on a joiner other than "+" ("C++"), so a sentence's final period is not kept.
WORD = re.compile(r"[A-Za-z0-9][\w'’+.-]*[\w+]|[A-Za-z0-9]")
# A run of word characters (Unicode letters, digits, "_"): the unit of "repeats n words of".
WORD_RUN = re.compile(r"\w+")
_ALNUM = re.compile(r"[a-z0-9]+")
# A name or a code as written: a word that starts with a letter ("Teams", "SYNC-409", "e.g"), or
# digits followed by letters ("2FA"); an apostrophe ends it ("Orbitly's" names "Orbitly").
NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*|[0-9]+[A-Za-z][A-Za-z0-9-]*")

# Function words of questions and prose: they say nothing about what is asked or what a passage
# is about. One list for the answer engine, the evaluator, the relevance check and the offline
# metrics.
STOP_WORDS = frozenset(
    "a an and are as at be been being by can could do does did doing done for from has have had having how "
    "i if in is it its itself me my of on or our ours please should tell the this that these those to was "
    "were we what when where which who whom whose why will with would you your yours there their theirs them "
    "they about into than then so any some much many get gets got us use used using need want know not no "
    "also just only very more most such other each both all may might must shall here s t don doesn isn "
    "aren wasn weren won ve re ll d m".split()
)

# The English stop words of Qdrant/bm25 (NLTK's), inline so no download is needed. They decide the
# terms of every stored sparse vector, so they change only with a re-index, never to match the
# list above; the keyword query of the sparse side drops them too.
INDEX_STOP_WORDS = frozenset(
    """a about above after again against ain all am an and any are aren aren't as at be because been
    before being below between both but by can couldn couldn't d did didn didn't do does doesn doesn't
    doing don don't down during each few for from further had hadn hadn't has hasn hasn't have haven
    haven't having he her here hers herself him himself his how i if in into is isn isn't it it's its
    itself just ll m ma me mightn mightn't more most mustn mustn't my myself needn needn't no nor not
    now o of off on once only or other our ours ourselves out over own re s same shan shan't she
    she's should should've shouldn shouldn't so some such t than that that'll the their theirs them
    themselves then there these they this those through to too under until up ve very was wasn wasn't
    we were weren weren't what when where which while who whom why will with won won't wouldn
    wouldn't y you you'd you'll you're you've your yours yourself yourselves""".split()
)

# Words that open a question or its clauses: a wh-word or an auxiliary. They say that something is
# asked, never what: not a subject, not a name when capitalised, not a keyword to search for.
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did can could should would will "
    "may might must shall".split()
)

# Words a question uses to ask for an answer, not to say what it is about ("explain", "list the
# kinds of", "what does X mean"): never its focus, nor a word its answer must contain.
REQUEST_WORDS = frozenset(
    "explain describe list name give show provide find happen happens mean means tell say says please "
    "way ways kind kinds type types thing things".split()
)

_STEMMER = SnowballStemmer("english")


def tokens(text: str) -> list[str]:
    """Lower-case word and number tokens, in order.

    Args:
        text: Any text.

    Returns:
        The tokens; a decimal or a version ("99.9", "4.2") is one token, a hyphen or an
        apostrophe splits a word ("sign-on" gives "sign" and "on").
    """
    return _TOKEN.findall(text.lower())


def words(text: str) -> list[str]:
    """Words as written, in order (see ``WORD``).

    Args:
        text: Any text.

    Returns:
        The words with their case: "Is the Pro plan's SSO v2.1-ready?" gives "Is", "the", "Pro",
        "plan's", "SSO", "v2.1-ready".
    """
    return WORD.findall(text)


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """The Snowball stem of one lower-case word, cached (a passage's words repeat across answers).

    Args:
        word: One lower-case word.

    Returns:
        Its stem: "pricing" gives "price", "integrations" gives "integr".
    """
    return str(_STEMMER.stem_word(word))


def content_words(text: str) -> list[str]:
    """Tokens that carry content: stop words out, single letters out (digits kept).

    Args:
        text: Any text.

    Returns:
        The content tokens, in order.
    """
    return [w for w in tokens(text) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]


def terms(text: str) -> set[str]:
    """The stems of a text's content words: what a question and a sentence are compared by.

    Args:
        text: Any text.

    Returns:
        The set of stems.
    """
    return {stem(w) for w in content_words(text)}


def normal_words(text: str) -> str:
    """A text reduced to its lower-case letters and digits, space-separated: a key for "the same words".

    Args:
        text: Any text.

    Returns:
        The key: "The Pro-plan costs $12/month!" gives "the pro plan costs 12 month".
    """
    return " ".join(_ALNUM.findall(text.lower()))


def names(text: str) -> set[str]:
    """The proper names and codes of a text, as written.

    A name is a capitalised word that does not open a clause (see ``sentences.clauses``) and is
    no stop word; a code holds a digit or is all capitals ("SYNC-409", "2FA", "SSO") wherever it
    stands.

    Args:
        text: Any text, usually a question.

    Returns:
        The names and codes: "Does it work with Teams?" gives {"Teams"}; "I get error SYNC-409"
        gives {"SYNC-409"}.
    """
    found = set()
    for match in NAME.finditer(text):
        word = match.group()
        if word.lower() in STOP_WORDS or len(word) < 2:
            continue
        is_code = any(c.isdigit() for c in word) or word.isupper()
        if is_code or (word[0].isupper() and not opens_clause(text, match.start())):
            found.add(word)
    return found
