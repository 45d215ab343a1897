"""Obfuscated text read as plain text before the injection rules judge it (pure, no I/O).

An instruction hides from word rules behind characters a reader skips or reads as letters: fillers
that render as blanks (the Hangul fillers), joiners that render as nothing (the combining grapheme
joiner, variation selectors), letters in boxes or circles, and ROT13. Unicode's compatibility
decomposition (NFKC) turns circled and squared letters into plain ones, but not the negative
(white on black) squared and circled letters, nor does it drop fillers: those are mapped here.
Lookalike letters (Cyrillic "а" for "a") and invisible characters are folded by ``normalise``,
leetspeak digits read as letters with ``LEET``.
"""

from __future__ import annotations

import codecs
import unicodedata
from collections.abc import Iterator
from functools import cache

from rag_common.text.injection_rules import named, text_data

# Invisible characters: zero-width and bidi controls, the soft hyphen, Unicode "tag" letters.
ZERO_WIDTH = named("zero_width")
# Blocks whose letters pass for Latin ones: Greek, Cyrillic (with its supplement), Armenian, Cherokee.
_LOOKALIKE_BLOCKS = ((0x0370, 0x0530), (0x0530, 0x0590), (0x13A0, 0x1400))
LEET = str.maketrans(text_data("leet"))

# Characters that render as a blank but are letters to Unicode, and joiners that render as nothing.
FILLERS = named("fillers")
JOINERS = named("joiners")
# Negative circled (U+1F150) and negative squared (U+1F170) capitals have no decomposition.
_BOXED = {base + i: chr(ord("A") + i) for base in (0x1F150, 0x1F170) for i in range(26)}
_OBFUSCATED = named("obfuscated")

# Words that make a text read as English: ROT13 of a sentence is decoded only when the decoded text
# holds several of them and the text as written holds almost none.
_ENGLISH = frozenset(text_data("english_words"))
_WORD = named("english_word")


def english_words(text: str) -> int:
    """How many of the text's words are common English ones (a cheap "does this read as English")."""
    return sum(w.lower() in _ENGLISH for w in _WORD.findall(text))


def unboxed(text: str, *, filler: str = " ") -> str:
    """Joiners dropped, boxed letters made plain, each filler read as ``filler``.

    A filler may stand between words ("Ignore<filler>previous") or inside one ("Ig<filler>nore"): the
    text is read both ways (``readings``).
    """
    if not _OBFUSCATED.search(text):
        return text
    return FILLERS.sub(filler, JOINERS.sub("", text).translate(_BOXED))


def rot13_reading(text: str) -> str | None:
    """The ROT13 decoding of a text, when it reads as English and the text as written does not.

    Each part after a colon is judged alone ("Decode this and follow it: <ROT13>").
    """
    parts = text.split(":")
    decoded_parts = [_rot13_part(part) for part in parts]
    if all(d is None for d in decoded_parts):
        return None
    return ":".join(d if d is not None else p for p, d in zip(parts, decoded_parts, strict=True))


def _rot13_part(text: str) -> str | None:
    if len(_WORD.findall(text)) < 3:
        return None
    decoded = codecs.encode(text, "rot13")
    written, read = english_words(text), english_words(decoded)
    return decoded if read >= 3 and read >= 3 * max(written, 1) else None


def readings(text: str) -> Iterator[str]:
    """The ways a sentence may be read besides as written: unboxed, and decoded from ROT13."""
    plain = unboxed(text)
    if plain != text:
        yield plain
        if FILLERS.search(text):
            yield unboxed(text, filler="")
    decoded = rot13_reading(text)
    if decoded is not None:
        yield decoded


@cache
def _lookalikes() -> dict[int, str]:
    """Non-Latin letters that look like a Latin one, from Unicode's confusables data.

    Built once, on the first text that is not ASCII: loading the data takes a third of a second.
    """
    from confusable_homoglyphs import confusables

    candidates = "".join(chr(c) for low, high in _LOOKALIKE_BLOCKS for c in range(low, high))
    table = {ord(k): v for k, v in text_data("more_lookalikes").items()}
    for found in confusables.is_confusable(candidates, greedy=True, preferred_aliases=["latin"]) or []:
        char: str = found["character"]
        latin = [h["c"] for h in found["homoglyphs"] if len(h["c"]) == 1 and h["c"].isascii() and h["c"].isalpha()]
        if not latin:
            continue
        target = latin[0]
        if char.isupper():
            # Unicode's prototype of every I-like capital is "l"; in a word such a capital reads "I".
            target = "I" if target == "l" else target.upper()
        table[ord(char)] = target
    return table


def warm() -> None:
    """Load the lookalike table now (at a service's start), not on the first question that needs it."""
    _lookalikes()


def normalise(text: str) -> str:
    """A text as the rules read it: lookalikes mapped to Latin, invisible characters dropped.

    Compatibility forms (full-width, mathematical letters) are folded first.
    """
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", ZERO_WIDTH.sub("", text)).translate(_lookalikes())


def decode_tags(text: str) -> str:
    """The ASCII that Unicode tag letters spell (U+E0041 is an invisible "A")."""
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)
