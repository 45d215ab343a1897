"""Which sentences of the material a question may be drawn from, as far as their words tell (pure).

The generator parses a sentence that passes ``askable_text`` further (a finite verb with its
subject: ``rag_generator.linguistics.content_sentence``); the retriever counts the sentences that
pass it in a unit, to tell the teacher how much material the unit holds for the paper asked.
"""

from __future__ import annotations

import re

MIN_WORDS, MAX_WORDS = 7, 45
# What navigation, front matter and cross-references say: not a statement of the material.
NOT_CONTENT_TEXT = re.compile(
    r"\b(?:click|learn more|read more|for more (?:information|details)|see (?:the|our|also|below|above)|"
    r"copyright|all rights reserved|edition|this (?:handbook|course|chapter|guide|page|section|document|book|"
    r"tutorial|lesson|lab)|next:|previous:|back to|table of contents|below|above|the following|here|do(?:ing)? so|"
    r"(?:this|these|those|that) (?:\w+ )?(?:example|step|screenshot|figure|table|image|one|way))\b",
    re.IGNORECASE,
)
# What ties a sentence to the one before it, cleaned from a sentence ("Note that ...").
OPENERS = ("note that", "note:", "also,", "however,", "for example,", "in addition,")
NOTE = re.compile(rf"^(?:{'|'.join(OPENERS)})\s+", re.IGNORECASE)
# Words run together where a table or a page lost its layout ("1.systemused", "Claude.stop_sequencesJSON").
GLUED = re.compile(r"\d\.[a-z]{3,}|[a-z]{3,}\.[a-z_]{3,}[A-Z]|[a-z]{2,}[A-Z]{2,}[a-z]|\b[a-z]{3,}[A-Z][a-z]{2,}")
LABEL = re.compile(r"^[A-Z][\w'’/-]*(?: [\w'’/-]+){0,3}:\s+(?=[A-Z])")
MARKUP = re.compile(r"[{}<>]|\s:\s\"|=>")  # JSON, markup or code left in a sentence
FOOTNOTE = re.compile(r"^\s*(?:\[\d+\]|\d+[.)]?\s|\*|†)")
ANAPHORA = frozenset("this these that those it they he she its their them there such".split())
# "this back pressure", "send these": a sentence holding one of them leans on the one before it.
POINTING = frozenset({"this", "these", "those"})


def clean_sentence(text: str) -> str:
    """A sentence without the discourse opener that ties it to the one before ("Note that ...")."""
    text = " ".join(text.split())
    stripped = LABEL.sub("", NOTE.sub("", text))  # "Clarity: Simpler subtasks mean ..." asks the statement
    return stripped[:1].upper() + stripped[1:] if stripped != text else text


def askable_text(text: str) -> bool:
    """Whether a cleaned sentence (``clean_sentence``) reads as a statement of the material.

    7-45 words; no question or lead-in; no footnote, navigation, markup or glued words; nothing
    opening it or pointing back that leans on the sentence before.
    """
    text = text.strip()
    words = text.split()
    if NOTE.match(text) or not MIN_WORDS <= len(words) <= MAX_WORDS:
        return False
    if text.endswith(("?", ":")) or FOOTNOTE.match(text) or NOT_CONTENT_TEXT.search(text):
        return False
    if GLUED.search(text) or MARKUP.search(text):
        return False
    first = words[0].lower().strip("\"'“‘(")
    return first not in ANAPHORA and not any(w.lower().strip(".,;:!\"')”’") in POINTING for w in words)
