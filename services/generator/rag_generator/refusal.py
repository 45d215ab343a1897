"""Why the passages found do not answer a question (pure): the refusal's reason, or "".

Passing the retriever's relevance threshold is not enough: the collection's own words carry an
in-domain question there. These checks look for what the question turns on.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from rag_common.text.quotable import Candidate
from rag_common.text.words import STOP_WORDS
from rag_common.wire.messages import Passage
from rag_generator.asking import Asked, mentions
from rag_generator.relevance import Scored, term, terms
from rag_generator.slots import SLOT_WORDS, SlotRule, decides, fills

# A short question is about the names it uses ("Can I pay with Bitcoin?"): one that no passage
# holds means the passages answer another question. A long question carries names for context
# ("According to Anthropic's documentation, ...") that need not appear in the passage.
SHORT_QUESTION_WORDS = 12
TYPO_SIMILARITY = 0.8  # difflib ratio at which a missing name is taken for a misspelling of a present one


def why_unanswered(asked: Asked, candidates: Sequence[Candidate], passages: Sequence[Passage]) -> str:
    """Why the passages do not answer the question ("" when they may).

    Passing the retriever's relevance threshold is not enough: the collection's own words carry
    an in-domain question there ("Who is the CEO of Orbitly?" meets every passage on "Orbitly").
    So a question is not answered when every name it asks about is missing from the passages
    ("Does it integrate with Microsoft Teams?"), or when the word a short wh-question turns on
    is ("CEO", "employees", "founded"). A short acronym ("API", "SSO") is often written out in
    the documents, so it alone decides nothing.
    """
    everything = " ".join(f"{c.text} {c.context}" for c in candidates)
    # A file name counts too, as written ("Northwind_Standard_Benefits_Details.pdf", a name a reader
    # quotes) and its words apart ("Northwind Standard Benefits").
    everything += " " + " ".join(f"{p.source} {re.sub(r'[_./-]+', ' ', p.source)} {p.section or ''}" for p in passages)
    missing_heads = [h for h in asked.heads if not _holds_word(everything, h)]
    if missing_heads:
        return f"no passage mentions {', '.join(missing_heads)}"
    if len(asked.question.split()) > SHORT_QUESTION_WORDS:
        return ""  # a long question carries names for context; the retriever asks the collection of them
    missing = sorted(n for n in asked.names if not acronym(n) and not mentions(everything, n))
    if missing:
        # A misspelt name ("Northwind Helth") is the name the passages hold, not another one.
        written = set(re.findall(r"\b[A-Z][\w-]+", everything))
        missing = [n for n in missing if not difflib.get_close_matches(n, written, n=1, cutoff=TYPO_SIMILARITY)]
    if missing:
        return f"no passage mentions {', '.join(missing)}"
    return ""


def slot_unfilled(slot: SlotRule | None, question: str, scored: Sequence[Scored]) -> str:
    """Why the passages do not answer a question whose slot no unit near its focus fills ("" if one does)."""
    if slot is None or not decides(slot, question) or any(s.lexical > 0 and fills(s.candidate, slot) for s in scored):
        return ""
    return f"no passage near the question gives the {SLOT_WORDS[slot.slot]} it asks for"


def acronym(name: str) -> bool:
    letters = name[:-1] if name.endswith("s") else name
    return len(letters) <= 4 and letters.isalpha() and letters.isupper()


def _holds_word(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` in some form: by stem, or for a verb in -ed by its own
    family ("founded": founder, founding; not "found", which only shares the stem)."""
    if word.endswith("ed") and len(word) > 5:
        base = word[:-2]
        return bool(re.search(rf"\b{re.escape(base)}(ed|er|ers|ing|s|ation)?\b", text, re.IGNORECASE))
    if "-" in word:  # "nats-server" is held by "NATS server" and by "nats-server"
        return all(term(part) in terms(text) for part in word.split("-") if part not in STOP_WORDS)
    return term(word) in terms(text)
