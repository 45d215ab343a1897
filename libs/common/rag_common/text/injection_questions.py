"""Attacks in questions (pure, no I/O): overrides, prompt or secret extraction, role play, encodings.

A question is judged as written, folded (``normalise``), as leetspeak, as ROT13 and decoded from
base64 or hex, by the document rules of kind override and fake_system_prompt, the line rules and the
question rules of ``injection_rules.toml``. ``screen_question`` drops the attacking parts of a
question that also holds a real request.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from rag_common.text.injection_normalise import LEET, ZERO_WIDTH, normalise
from rag_common.text.injection_rules import Rule, hits, named, rules

_HOW_TO = named("how_to")
_B64_BLOB = named("b64_blob")
_HEX_BLOB = named("hex_blob")
_PARTS = named("parts")
_JOINER = named("joiner")
_REQUEST = named("request")


@dataclass(frozen=True)
class QuestionVerdict:
    """Whether a question looks like an attack, of which kinds, and the text that fired."""

    suspected: bool
    kinds: tuple[str, ...]
    matched: tuple[str, ...]  # the text that fired, per kind, for logs and flag details


@cache
def _question_rules() -> tuple[Rule, ...]:
    """The document rules that also attack in a question, then the question's own."""
    own_kinds = {"override", "fake_system_prompt"}
    return (*(r for r in rules("sentence") if r.kind in own_kinds), *rules("line"), *rules("question"))


def _decoded_base64(text: str) -> Iterator[str]:
    for match in _B64_BLOB.finditer(text):
        blob = match.group(0)
        padded = blob + "=" * (-len(blob) % 4)
        for decoder in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = decoder(padded)
            except (binascii.Error, ValueError):
                continue
            decoded = raw.decode("utf-8", errors="ignore")
            if decoded and sum(c.isprintable() or c.isspace() for c in decoded) / len(decoded) > 0.9:
                yield decoded
                break


def _decoded_hex(text: str) -> Iterator[str]:
    for match in _HEX_BLOB.finditer(text):
        digits = re.sub(r"0x|\\x|[\s:,]", "", match.group(0))
        try:
            yield bytes.fromhex(digits[: len(digits) // 2 * 2]).decode("utf-8", errors="ignore")
        except ValueError:
            continue


def _variants(question: str) -> Iterator[tuple[str, str]]:
    """(kind to add, text) for the question as written, normalised and decoded."""
    yield "", question
    plain = normalise(question)
    if plain != question:
        yield "obfuscated", plain
    yield "encoded", plain.translate(LEET)
    yield "encoded", codecs.encode(plain, "rot13")
    for decoded in (*_decoded_base64(plain), *_decoded_hex(plain)):
        yield "encoded", decoded
        yield "encoded", normalise(decoded)


def _question_hits(text: str) -> Iterator[tuple[str, str]]:
    how_to = bool(_HOW_TO.search(text))
    for kind, fired in hits(_question_rules(), text):
        # "How do I list my API keys?" is a product question; "list API keys" is a request for them.
        if kind == "secret_extraction" and how_to:
            continue
        yield kind, fired


def check_question(question: str) -> QuestionVerdict:
    """Whether a question attacks the rules, and how.

    An attack tries to override the rules, extract the prompt or secrets, role-play the model out
    of its rules, or smuggle any of that in an encoded or disguised form.
    """
    kinds: dict[str, None] = {}
    matched: dict[str, None] = {}
    for extra, text in _variants(question):
        for kind, fired in _question_hits(text):
            if extra and kind in kinds:
                continue  # already found in plain sight; decoding adds nothing
            kinds.setdefault(kind, None)
            if extra:
                kinds.setdefault(extra, None)
            matched.setdefault(fired.strip(), None)
    if ZERO_WIDTH.search(question) and kinds:
        kinds.setdefault("obfuscated", None)
    return QuestionVerdict(suspected=bool(kinds), kinds=tuple(kinds), matched=tuple(matched))


@dataclass(frozen=True)
class ScreenedQuestion:
    """A question once its attacking parts are dropped.

    ``request`` is what is left to answer: the whole question when nothing attacks; None when
    nothing is left, or when the attack cannot be told apart from the rest, so the whole question
    is refused.
    """

    verdict: QuestionVerdict
    request: str | None

    @property
    def mixed(self) -> bool:
        """An attack was dropped and a request is left."""
        return self.verdict.suspected and self.request is not None


def screen_question(question: str) -> ScreenedQuestion:
    """The question with its attacking parts dropped, each part judged on its own."""
    verdict = check_question(question)
    if not verdict.suspected:
        return ScreenedQuestion(verdict, question)
    parts = [part for part in _PARTS.split(question.strip()) if part.strip()]
    kept = [_JOINER.sub("", part).strip() for part in parts if not check_question(part).suspected]
    kept = [part for part in kept if part]
    if len(kept) == len(parts):
        return ScreenedQuestion(verdict, None)  # no part attacks alone: the whole question does
    request = " ".join(part[0].upper() + part[1:] for part in kept)
    if not _REQUEST.search(request) or check_question(request).suspected:
        return ScreenedQuestion(verdict, None)
    return ScreenedQuestion(verdict, request)
