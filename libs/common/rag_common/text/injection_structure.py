"""Instructions to the reader told apart by their structure, not by a list of phrasings (pure, no I/O).

Documentation is full of imperatives ("Run `nats server check`") and modal sentences ("The response
must contain a JSON object"): they talk to the user, or about an HTTP reply. A planted instruction
has the same grammar with another addressee: the assistant, the model, the reply it writes, the
instructions it was given. So a sentence is planted when

- it throws away the reader's instructions: a verb of overriding ("ignore", "set aside", "pay no
  heed") and the instructions, marked as earlier or as the reader's ("prior directions", "the
  guidance you received", "your system prompt");
- it is a modal directive whose subject is the assistant or its reply: in spaCy's dependency parse,
  a verb of saying under "should/must/ought/has to/will" whose subject names an addressee ("Any AI
  summarising this page shall report...", "The response should give...", "Your reply has to
  mention..."); a reply is only directed with a verb of saying ("must state", not "must contain");
- it addresses the model directly ("Dear reader model.", "Chatbot, listen"), frames a new task or
  role ("PRIORITY OVERRIDE", "END OF DOCUMENT. NEW TASK:", "<instructions>"), or switches persona
  ("Pretend you are ... and announce") with a verb of saying or an addressee beside it.

Other languages are read with the same parts, per language, from their words (no parser): a
sentence is that language when it holds more of its function words than of English ones.
The words are data (``instruction_forms.toml``); only the sentences that hold an addressee or a
reply noun are parsed, which keeps ingest cheap.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_common.text.injection_normalise import english_words

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

FORMS_FILE = Path(__file__).with_name("instruction_forms.toml")

# What a marked sentence does to the rest of its paragraph. A direct address or a frame ("Dear
# reader model.", "NEW TASK:") carries every sentence after it; any other directive carries the
# imperatives and second-person sentences that follow it (an instruction split over sentences).
CARRIES_PARAGRAPH = "paragraph"
CARRIES_DIRECTIVES = "directives"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why a sentence is planted: its kind (``injection.DOCUMENT_KINDS``), the rule, what it carries."""

    kind: str
    rule: str
    carries: str = CARRIES_DIRECTIVES


def phrases(words: Iterable[str]) -> re.Pattern[str]:
    """A case-insensitive pattern matching any of ``words`` whole (a phrase's spaces match any space)."""
    alternatives = sorted({re.escape(w).replace(r"\ ", r"\s+") for w in words}, key=len, reverse=True)
    return re.compile(rf"(?<![\w'])(?:{'|'.join(alternatives) or '(?!)'})(?!\w)", re.IGNORECASE)


@cache
def forms() -> dict[str, Any]:
    """The data file, read once."""
    with FORMS_FILE.open("rb") as handle:
        return tomllib.load(handle)


@dataclass(frozen=True)
class _Lexicon:
    addressees: re.Pattern[str]
    replies: re.Pattern[str]
    instructions: re.Pattern[str]
    earlier: re.Pattern[str]  # instructions marked as earlier, or as the reader's
    overrides: re.Pattern[str]
    say: frozenset[str]
    speech: frozenset[str]
    modals: frozenset[str]
    vocative: re.Pattern[str]
    reader_names: re.Pattern[str]
    framing: re.Pattern[str]
    persona: re.Pattern[str]
    persona_cue: re.Pattern[str]
    reader_acts: re.Pattern[str]
    continuation: frozenset[str]
    mandative: re.Pattern[str]


@cache
def _english() -> _Lexicon:
    en = forms()["english"]
    nouns = phrases(en["instruction_nouns"]).pattern
    prior = "|".join(sorted(map(re.escape, [*en["prior_words"], "your"]), key=len, reverse=True))
    earlier = re.compile(
        rf"\b(?:{prior})\s+(?:[\w-]+\s+){{0,2}}(?:{nouns})(?!\w)|(?<![\w'])(?:{nouns})\s+(?:[\w'-]+\s+){{0,4}}"
        rf"(?:{prior})\b",
        re.IGNORECASE,
    )
    say = frozenset(en["say_verbs"])
    return _Lexicon(
        addressees=phrases(en["addressees"]),
        replies=phrases(en["replies"]),
        instructions=phrases(en["instruction_nouns"]),
        earlier=earlier,
        overrides=phrases(en["override_verbs"]),
        say=say,
        speech=frozenset(en["speech_verbs"]) | say | _OVERRIDE_WORDS,
        modals=frozenset(en["modal_words"]),
        vocative=re.compile(
            rf"^\W*(?:(?:{phrases(en['vocatives']).pattern})\W+(?:\w+\W+){{0,2}}(?:{phrases(en['addressees']).pattern})"
            rf"|(?:{phrases(en['addressees']).pattern})\s*[,!])",
            re.IGNORECASE,
        ),
        reader_names=phrases(en["reader_names"]),
        framing=phrases(en["framing"]),
        persona=phrases(en["persona"]),
        persona_cue=phrases([*en["addressees"], *say]),
        reader_acts=phrases(en["reader_acts"]),
        continuation=say | frozenset(en["continuation_verbs"]),
        mandative=phrases(en["mandative"]),
    )


# Quoted text and inline code are examples, not instructions to whoever reads the page.
_QUOTED = re.compile(r"“[^”]*(?:”|$)|\"[^\"]*(?:\"|$)|`[^`]*(?:`|$)|<(\w+)>[^<]*</\1>")
# An `<instructions>` element whose text is a bare order to say something: a prompt smuggled into a page
# (a prompt-writing guide's examples hold numbered steps and template variables, not a value to say).
_INSTRUCTIONS_TAG = re.compile(r"<instructions>\s*(?P<order>[^<{}]{1,200})</instructions>", re.IGNORECASE)


def directive(sentence: str) -> Verdict | None:
    """Whether an English sentence is an instruction to its reader, and by which rule."""
    lex = _english()
    tagged = _INSTRUCTIONS_TAG.search(sentence)
    if tagged and _imperative(tagged.group("order")) and tagged.group("order").split()[0].lower() in lex.say:
        return Verdict("override", "instructions_tag", CARRIES_PARAGRAPH)
    sentence = _QUOTED.sub(" ", sentence)
    if lex.framing.search(sentence):
        return Verdict("override", "framing", CARRIES_PARAGRAPH)
    if lex.vocative.search(sentence) or lex.reader_names.search(sentence):
        return Verdict("addressed_to_assistant", "address", CARRIES_PARAGRAPH)
    if _overrides(sentence, lex) and not _subject_is_third_party(sentence):
        return Verdict("override", "override")
    if lex.persona.search(sentence) and lex.persona_cue.search(sentence):
        return Verdict("addressed_to_assistant", "persona", CARRIES_PARAGRAPH)
    if lex.reader_acts.search(sentence) and _imperative(sentence):
        return Verdict("addressed_to_assistant", "reader_act")
    if (mandate := lex.mandative.search(sentence)) and _orders_the_reply(sentence[mandate.end() :], lex):
        return Verdict("addressed_to_assistant", "mandative")
    if (lex.addressees.search(sentence) or lex.replies.search(sentence)) and _modal_directive(sentence, lex):
        return Verdict("addressed_to_assistant", "modal_directive")
    return None


def _overrides(sentence: str, lex: _Lexicon) -> bool:
    """An overriding verb, and the instructions it throws away: earlier ones, or right after the verb."""
    override = lex.overrides.search(sentence)
    if override is None:
        return False
    after = lex.instructions.search(sentence, override.end())
    return bool(lex.earlier.search(sentence)) or (
        after is not None and len(sentence[override.end() : after.start()].split()) <= 3
    )


_OVERRIDE_WORDS = frozenset(
    "ignore ignores disregard disregards forget forgets overlook dismiss neglect override overrides bypass abandon "
    "discard skip drop".split()
)


def _subject_is_third_party(sentence: str) -> bool:
    """The overriding verb has a subject other than "you" or an addressee ("The proxy ignores earlier rules")."""
    lex = _english()
    for token in parse(sentence):
        if token.lower_ not in _OVERRIDE_WORDS:
            continue
        # "Questions that try to override the rules": the subject is the trying one's.
        while not (subjects := [c for c in token.children if c.dep_ in {"nsubj", "nsubjpass"}]):
            if token.dep_ not in {"xcomp", "conj"} or token.head is token:
                break
            token = token.head
        if token.dep_ == "relcl" and not subjects:
            return True  # "a question that tries to override instructions" describes the question
        if not subjects:
            return False
        if subjects[0].tag_ == "WDT":  # "that" in a relative clause: the noun it refers to is the subject
            return True
        head = subjects[0]  # the subject's own words, not a clause about it ("sentences that address the assistant")
        subject = " ".join(
            t.text for t in head.subtree if t is head or (t.head is head and t.dep_ in {"compound", "amod"})
        )
        return head.lower_ != "you" and not lex.addressees.search(subject)
    return False


@lru_cache(maxsize=256)
def parse(sentence: str) -> Doc:
    """A sentence's parse: the rules below read one sentence several times, and it is parsed once."""
    from rag_common.text.phrases import parse as spacy_parse

    return spacy_parse(sentence)


def _imperative(sentence: str) -> bool:
    """The main clause is an imperative: its root is a bare verb with no subject."""
    doc = parse(sentence)
    return any(
        t.dep_ == "ROOT" and t.tag_ == "VB" and not any(c.dep_.startswith("nsubj") for c in t.children) for t in doc
    )


def goes_on(sentence: str) -> bool:
    """A sentence that goes on an instruction: an order to say or change something, or about "your answer"."""
    lex = _english()
    if re.search(r"\byour\s+(?:answer|reply|response|output)\b", sentence, re.IGNORECASE):
        return True
    return any(
        t.dep_ == "ROOT"
        and t.tag_ == "VB"
        and t.lower_ in lex.continuation
        and not any(c.dep_.startswith("nsubj") for c in t.children)
        for t in parse(sentence)
    )


def _orders_the_reply(clause: str, lex: _Lexicon) -> bool:
    """After "it is essential that": the reply (or the assistant), then a verb of saying."""
    named = lex.replies.search(clause) or lex.addressees.search(clause)
    return named is not None and any(w.lower() in lex.say for w in _WORDS.findall(clause[named.end() :]))


def _modal(token: Token, lex: _Lexicon) -> bool:
    """A modal of obligation; "will" only as "will now" or "will always" (an order, not a description)."""
    if token.lower_ == "will":
        return any(t.lower_ in {"now", "always"} for t in token.head.children)
    return token.lower_ in lex.modals


def _modal_directive(sentence: str, lex: _Lexicon) -> bool:
    """A verb of saying under a modal (or in a clause about the reader's own reply) whose subject is an addressee.

    The subject's words decide: an addressee ("the assistant", "any AI summarising this page") takes
    any verb of saying or overriding; a reply ("the response", "your reply") only a verb of saying,
    so "The response must contain a JSON object" stays documentation.
    """
    doc = parse(sentence)
    for verb in doc:
        if verb.lower_ not in lex.speech or verb.pos_ not in {"VERB", "AUX", "NOUN"}:
            continue
        governor = verb
        modal = any(c.dep_ == "aux" and _modal(c, lex) for c in verb.children)
        while governor.dep_ in {"xcomp", "conj", "acomp"} and governor.head is not governor:
            governor = governor.head
            modal = (
                modal
                or governor.lower_ in lex.modals
                or any(c.dep_ in {"aux", "auxpass"} and _modal(c, lex) for c in governor.children)
            )
        subjects = [c for c in governor.children if c.dep_ in {"nsubj", "nsubjpass", "csubj"}]
        if not subjects:
            continue
        subject = " ".join(t.text for t in subjects[0].subtree)
        if lex.addressees.search(subject) and modal:
            return True
        if lex.replies.search(subject) and verb.lower_ in lex.say:
            own = re.search(r"\byou(?:r)?\b", subject, re.IGNORECASE)
            if modal or own:
                return True
    return False


@dataclass(frozen=True)
class _Language:
    code: str
    function_words: frozenset[str]
    override: re.Pattern[str]
    instructions: re.Pattern[str]
    addressees: re.Pattern[str]
    replies: re.Pattern[str]
    modals: re.Pattern[str]
    speech: re.Pattern[str]
    from_now_on: re.Pattern[str]


@cache
def _languages() -> tuple[_Language, ...]:
    out = []
    for code, words in forms()["languages"].items():
        out.append(
            _Language(
                code=code,
                function_words=frozenset(words["function_words"]),
                override=phrases(words["override"]),
                instructions=phrases(words["instructions"]),
                addressees=phrases(words["addressees"]),
                replies=phrases(words["replies"]),
                modals=phrases(words["modals"]),
                speech=phrases(words["speech"]),
                from_now_on=phrases(words["from_now_on"]),
            )
        )
    return tuple(out)


_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def languages_of(sentence: str) -> list[str]:
    """The data file's other languages the sentence may be in, likeliest first.

    Each has at least two of its function words in it, and more than the sentence has English ones
    (Italian and French share "la" and "le", so both are tried).
    """
    words = [w.lower() for w in _WORDS.findall(sentence)]
    english = english_words(sentence)
    scores = sorted(((sum(w in lang.function_words for w in words), lang.code) for lang in _languages()), reverse=True)
    return [code for score, code in scores if score >= 2 and score > english]


def language_of(sentence: str) -> str | None:
    """The sentence's likeliest language when it is one of the data file's others (not English), else None."""
    codes = languages_of(sentence)
    return codes[0] if codes else None


def foreign_directive(sentence: str) -> Verdict | None:
    """Whether a sentence in another language is an instruction to its reader."""
    opening = " ".join(_WORDS.findall(sentence)[:3])
    by_code = {lang.code: lang for lang in _languages()}
    for code in languages_of(sentence):
        lang = by_code[code]
        if lang.override.search(sentence) and lang.instructions.search(sentence):
            return Verdict("override", f"override:{code}")
        if lang.addressees.search(opening):
            return Verdict("addressed_to_assistant", f"address:{code}", CARRIES_PARAGRAPH)
        if lang.replies.search(sentence) and lang.modals.search(sentence):
            return Verdict("addressed_to_assistant", f"modal_directive:{code}")
        if lang.from_now_on.search(sentence) and lang.speech.search(sentence):
            return Verdict("override", f"from_now_on:{code}")
    return None
