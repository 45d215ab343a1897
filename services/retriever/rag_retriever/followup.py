"""Follow-up questions made standalone, by rules (pure; no model needed).

"And how much does it cost?" after "What does the Business plan include?" means "How much does the
Business plan cost?". Search needs the standalone form: the follow-up alone names nothing to find.
The rules cover what conversations mostly do:

- a pronoun standing for the earlier subject ("it", "they", "that plan") → the subject;
- "what about X?", "and the X?", "how about X?" → the earlier question with X in place of its
  subject (or of the word X is a sibling of: "Sev2" for "Sev1", "Enterprise" for "Business");
- a bare ellipsis ("How much?", "Why?") → the wh-words applied to the earlier subject.

A question that names its own subject is left alone, whatever came before it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_common.text.phrases import noun_phrases
from rag_common.text.words import QUESTION_WORDS, STOP_WORDS
from rag_common.text.words import words as words_in
from rag_common.wire.messages import Turn

_LEAD = re.compile(r"^\s*(?:and|also|so|but|ok(?:ay)?|then)\b[\s,]*", re.IGNORECASE)
_WHAT_ABOUT = re.compile(
    r"^\s*(?:and\s+)?(?:what|how)\s+about\s+(?P<x>.+?)\s*[?.!]*\s*$|^\s*and\s+(?P<y>(?:the|for|in|on|with)\b.+?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_PRONOUN = re.compile(
    r"\b(?:it|its|it's|they|them|their|theirs|this|that|these|those)\b(?!\s+(?:is|are)\s+(?:possible|necessary|true))",
    re.IGNORECASE,
)
# "Is it possible to...", "it takes": "it" that stands for nothing.
_EXPLETIVE = re.compile(
    r"\b(?:is|was|will|would|does)\s+it\s+(?:possible|necessary|true|ok(?:ay)?|safe|hard|easy|required|recommended"
    r"|worth|better|free|mandatory|allowed)\b|\bit\s+(?:takes?|seems?|depends)\b|\bhow\s+long\s+does\s+it\s+take\b",
    re.IGNORECASE,
)
_DEMONSTRATIVE_NOUN = re.compile(r"\b(?:this|that|these|those)\s+(?P<noun>[a-z][\w-]*)", re.IGNORECASE)
_DETERMINER = re.compile(r"\b(?:the|a|an|my|our|your|this|that|these|those)\s+", re.IGNORECASE)
_ELLIPSIS = re.compile(
    r"^\s*(?:and\s+)?(?P<wh>how much|how many|how long|how often|how|why|when|where|who|which one|what else)"
    r"\s*[?.!]*\s*$",
    re.IGNORECASE,
)
# Words that never name the subject of a question: stop words, question words, pronouns and particles
# ("go", "often", "yes"), less the determiners and quantifiers a noun phrase holds ("the other plan",
# "the most popular plan").
_NOT_A_SUBJECT = (
    STOP_WORDS
    | QUESTION_WORDS
    | frozenset("he she go goes going long often yes after again before but down off out over under up".split())
) - frozenset("a an the all any both each some more most only other such".split())
# Verbs and prepositions end a noun phrase: "the Business plan | include".
_PHRASE_END = _NOT_A_SUBJECT | frozenset(
    "include includes included cost costs work works happen happens mean means need needs supports "
    "uses used make makes take takes run runs offer offers provide provides require requires guarantee "
    "guarantees protect protects apply applies allow allows contain contains sync syncs".split()
)


# Nouns that say what kind of thing a name is: "the Business plan" is "Business" for swapping.
_GENERIC_HEADS = frozenset({"plan", "plans", "tier", "tiers", "edition", "editions", "level", "levels"})


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The standalone question and which rule made it (shown in logs and tests)."""

    question: str
    rule: str


def _has_capitalised_name(text: str) -> bool:
    """A proper name after the first word ("the Free plan", "GitHub"): the question names its subject."""
    words = words_in(text)[1:]
    return any(w[0].isupper() and w.lower() not in _NOT_A_SUBJECT for w in words)


def subject_of(question: str) -> str:
    """The thing an earlier question was about: a noun phrase, never a verb fragment.

    The parse's noun phrases come first: one holding a name ("the Business plan"), then the
    subject or object of the question ("single sign-on" in "How do I set up single sign-on?"), then
    any. When the parse finds none, the first phrase led by a determiner ("the API rate limit"),
    then the question's last content words.
    """
    text = question.strip().rstrip("?.! ")
    phrases = noun_phrases(question.strip())
    for wanted in (lambda p: p.named, lambda p: p.argument, lambda p: True):
        chosen = next((p for p in phrases if wanted(p)), None)
        if chosen is not None:
            return _as_the(chosen.text)
    candidates: list[str] = []
    for match in _DETERMINER.finditer(text):
        words: list[str] = []
        for word in words_in(text[match.end() :]):
            if word.lower() in _PHRASE_END:
                break
            words.append(word)
        if words:
            candidates.append(f"{match.group().strip().lower()} {' '.join(words)}")
    if candidates:
        return _as_the(candidates[0])
    content = [w for w in words_in(text) if w.lower() not in _PHRASE_END]
    return " ".join(content[-3:])


def _as_the(phrase: str) -> str:
    """ "a Business plan" → "the Business plan": the subject is now known to both sides."""
    first, _, rest = phrase.partition(" ")
    return f"the {rest}" if first in {"a", "an", "this", "that", "my", "your", "our"} else phrase


def _standalone(turn: Turn) -> str:
    return (turn.rewritten_question or turn.question).strip()


def _swap(previous: str, replacement: str) -> str | None:
    """The earlier question with ``replacement`` in place of what it is a sibling of."""
    rep_words = [w for w in words_in(replacement) if w.lower() not in {"the", "a", "an"}]
    if not rep_words:
        return None
    prev_words = words_in(previous)
    # A sibling token: same letters before a number ("Sev1" / "Sev2"), or a capitalised name.
    head = rep_words[0]
    stem = re.match(r"[A-Za-z]+", head)
    if stem and len(rep_words) == 1 and any(ch.isdigit() for ch in head):
        for word in prev_words:
            if word != head and word.lower().startswith(stem.group().lower()) and any(c.isdigit() for c in word):
                return re.sub(rf"\b{re.escape(word)}\b", head, previous, count=1)
    subject = subject_of(previous)
    subject_words = subject.split()
    # "what about Enterprise" with subject "the Business plan": keep the shared head noun ("plan").
    # Acronyms ("SLA", "API") name the kind of thing, not which one: "the Enterprise SLA" and
    # "the Business plan" are about the same kind, so "Business" replaces "Enterprise" only.
    names = [w for w in subject_words if w[:1].isupper() and not w.isupper()]
    generic = [w for w in rep_words if w.lower() in _GENERIC_HEADS]
    if generic and len(generic) < len(rep_words) and rep_words[-1].lower() in _GENERIC_HEADS:
        rep_words = [w for w in rep_words if w.lower() not in _GENERIC_HEADS]
    if names and all(w[:1].isupper() for w in rep_words) and len(rep_words) <= len(names):
        new_subject = subject.replace(" ".join(names), " ".join(rep_words), 1)
        return (
            previous.replace(subject if subject in previous else " ".join(names), new_subject, 1)
            if (subject in previous or " ".join(names) in previous)
            else None
        )
    head = _head(replacement)
    if len(rep_words) >= 2 and head:
        # "email support" → "phone support": a sibling phrase with the same head noun.
        pattern = rf"\b([\w-]+)\s+{re.escape(rep_words[-1].rstrip('s'))}s?\b(?!\s+\w)"
        siblings = [m for m in re.finditer(pattern, previous, re.IGNORECASE) if m.group(1).lower() not in _PHRASE_END]
        sibling = siblings[-1] if siblings else None
        if sibling and sibling.group().lower() != " ".join(rep_words).lower():
            return previous[: sibling.start()] + " ".join(rep_words) + previous[sibling.end() :]
    if subject and subject in previous and _head(subject) == head:
        phrase = replacement.strip()
        if phrase.split()[0].lower() not in {"the", "a", "an"} and subject.startswith("the "):
            phrase = f"the {phrase}"
        return previous.replace(subject, phrase, 1)
    return None


def _head(phrase: str) -> str:
    """The head noun of a phrase, singular: "the Enterprise plans" → "plan"."""
    words = words_in(phrase)
    return words[-1].lower().rstrip("s") if words else ""


def _replace_pronoun(question: str, subject: str) -> str | None:
    """Put the subject where the first pronoun (or "that plan"-style phrase) stands."""
    demonstrative = _DEMONSTRATIVE_NOUN.search(question)
    if (
        demonstrative
        and demonstrative.group("noun").lower() not in _NOT_A_SUBJECT
        and demonstrative.group("noun").lower() in subject.lower()
    ):
        return question[: demonstrative.start()] + subject + question[demonstrative.end() :]
    for match in _PRONOUN.finditer(question):
        word = match.group().lower()
        if word in {"this", "that", "these", "those"}:
            following = question[match.end() :].lstrip()
            if following[:1].isalpha() and not following.lower().startswith(("is", "are", "was", "does", "do")):
                continue  # "that plan" handled above; "that" as a conjunction stands for nothing
        if word in {"its", "their", "theirs"}:
            replacement = f"{subject}'s"
        elif word == "it's":
            replacement = f"{subject} is"
        else:
            replacement = subject
        return question[: match.start()] + replacement + question[match.end() :]
    return None


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def rewrite_followup(question: str, history: Sequence[Turn]) -> Rewrite | None:
    """The standalone form of a follow-up, or None when ``question`` stands on its own."""
    if not history:
        return None
    previous = _standalone(history[-1])
    subject = subject_of(previous)
    if not subject:
        return None

    about = _WHAT_ABOUT.match(question)
    short = _LEAD.sub("", question).strip().rstrip("?.! ")
    if (
        not about
        and _LEAD.match(question)
        and 0 < len(words_in(short)) <= 4
        and words_in(short)[0].lower() not in QUESTION_WORDS
    ):
        about = _WHAT_ABOUT.match(f"what about {short}?")
    if about:
        replacement = (about.group("x") or about.group("y") or "").strip()
        qualifier = re.match(r"(?:for|in|on|with|during|after|before)\s+", replacement, flags=re.IGNORECASE)
        if qualifier:
            # "And on Enterprise?" after "... kept on the Business plan?" replaces that phrase;
            # "and for annual plans?" with no "for ..." before narrows the earlier question.
            base = previous.rstrip("?. ")
            same = list(re.finditer(rf"\b{re.escape(qualifier.group().strip())}\s+", base, re.IGNORECASE))
            if same and len(words_in(base[same[-1].end() :])) <= 4:
                return Rewrite(f"{base[: same[-1].start()]}{replacement}?", "what-about")
            return Rewrite(f"{base} {replacement}?", "what-about")
        swapped = _swap(previous, replacement)
        if swapped:
            return Rewrite(_capitalise(swapped), "what-about")
        return Rewrite(f"{previous.rstrip('?. ')} for {replacement}?", "what-about")

    ellipsis = _ELLIPSIS.match(question)
    if ellipsis:
        wh = ellipsis.group("wh").lower()
        if wh == "how much":
            return Rewrite(f"How much does {subject} cost?", "ellipsis")
        if wh == "what else":
            return Rewrite(f"What else is there about {subject}?", "ellipsis")
        return Rewrite(f"{_capitalise(wh)} — {subject}?", "ellipsis")

    body = _LEAD.sub("", question).strip()
    led = body != question.strip()
    if _EXPLETIVE.search(body):
        return None
    first_pronoun = _PRONOUN.search(body)
    if first_pronoun:
        before = body[: first_pronoun.start()]
        # "Does the GitHub integration sync when it fails?": the pronoun refers inside the question.
        if _DETERMINER.search(before) or _has_capitalised_name(before):
            return None
        replaced = _replace_pronoun(body, subject)
        if replaced and replaced != body:
            return Rewrite(_capitalise(replaced), "pronoun")
    if led and not _has_capitalised_name(body) and not _DETERMINER.search(body):
        return Rewrite(f"{_capitalise(body.rstrip('?. '))} ({subject})?", "carry-subject")
    return None
