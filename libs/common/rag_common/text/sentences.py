"""Sentences and clauses of a text (pure): the one sentence splitter and the rules around it.

``split_sentences`` cuts the units an extractive answer quotes (``quotable``), the statements
the evaluator checks against their sources, the statements whose numbers are compared across
sources (``conflicts``) and the sentences an assessment question is written from. ``clauses``
and ``opens_clause`` say where a capital letter may only open a clause and so names nothing.

The injection rules cut their own units (``injection``): they must also cut at table cells and
report character offsets, and what they find must not move when this splitter changes.
"""

from __future__ import annotations

import re

# A sentence ends at ".", "!" or "?" (closing quotes and brackets kept with it) before a space and
# a capital, a digit, an opening quote or bracket, or a "$"; or, with no space, between a word and
# a capitalised word ("... long documents.Tool Use & ...": a web page's cards exported as text).
# Two lowercase letters before the stop keep "e.g.", "U.S." and "Node.js" whole.
# The stop comes first in the pattern so that only a stop starts a match (an alternative opening on
# the look-behind is tried at every character: nine times slower on the corpora).
_SENTENCE_BREAK = re.compile(r"([.!?])(?:([\"'”’)\]]*)\s+(?=[A-Z0-9\"'“‘(\[$])|(?<=[a-z]{2}[.!?])(?=[A-Z][a-z]))")
# Words whose final period ends no sentence ("e.g. Slack", "approx. 30").
ABBREVIATIONS = frozenset(
    "e.g i.e etc vs approx incl no nr fig mr mrs ms dr st inc ltd co corp dept est jan feb mar apr jun jul aug "
    "sep sept oct nov dec mon tue wed thu fri sat sun".split()
)
_TERMINAL = re.compile(r"[.!?][\"'”’)\]]*$")
_ENDS_CLAUSE = re.compile(r"[.!?:][\"'”’)\]]*$")
_CLAUSE_BREAK = re.compile(r"[.!?;:]\s+|\n")
_OPENS_CLAUSE = re.compile(r"(?:^|[.!?;:]\s+|\n)\s*[\"'“(]*$")


def split_sentences(text: str) -> list[str]:
    """The sentences of a paragraph, stripped; "e.g. Slack", "99.9%" and "A. Smith" end none.

    Args:
        text: One paragraph (a line break is not read as a sentence end: split lines first).

    Returns:
        The non-empty sentences in order, each with its closing punctuation.
    """
    sentences, start = [], 0
    for match in _SENTENCE_BREAK.finditer(text):
        before = text[start : match.start()].split()
        word = before[-1].lower().rstrip(".") if before else ""
        if match.group(1) == "." and (word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
            continue
        sentences.append(text[start : match.end()].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def ends_sentence(text: str) -> bool:
    """Whether a text or a word ends with a sentence's closing punctuation ("done.", 'said."').

    Args:
        text: A sentence, a line or a single word.

    Returns:
        True when it ends with ".", "!" or "?", closing quotes and brackets allowed after it.
    """
    return bool(_TERMINAL.search(text))


def ends_clause(text: str) -> bool:
    """Whether a text ends a sentence or a lead-in clause: ``ends_sentence``, or a final colon.

    Args:
        text: A sentence, a line or a single word.

    Returns:
        True when it ends with ".", "!", "?" or ":", closing quotes and brackets allowed after it.
    """
    return bool(_ENDS_CLAUSE.search(text))


def clauses(text: str) -> list[str]:
    """The stretches of a text between sentence or clause punctuation (". ! ? ; :") and line breaks.

    A capital letter on the first word of a clause says nothing; anywhere else it marks a name.

    Args:
        text: Any text, usually a question.

    Returns:
        The clauses in order, without the punctuation that ended them; empty ones included.
    """
    return _CLAUSE_BREAK.split(text)


def opens_clause(text: str, index: int) -> bool:
    """Whether the word starting at ``index`` opens a clause (see ``clauses``), quotes allowed before it.

    Args:
        text: The text the word stands in.
        index: Where the word starts.

    Returns:
        True at the start of the text, after ". ! ? ; :" and a space, or after a line break.
    """
    return bool(_OPENS_CLAUSE.search(text, 0, index))
