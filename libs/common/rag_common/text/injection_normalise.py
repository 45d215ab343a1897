"""Obfuscated text read as plain text before the injection rules judge it (pure, no I/O).

An instruction hides from word rules behind characters a reader skips or reads as letters: fillers
that render as blanks (the Hangul fillers), joiners that render as nothing (the combining grapheme
joiner, variation selectors), letters in boxes or circles, and ROT13. Unicode's compatibility
decomposition (NFKC) turns circled and squared letters into plain ones, but not the negative
(white on black) squared and circled letters, nor does it drop fillers: those are mapped here.
Lookalike letters (Cyrillic "а" for "a") are folded by ``injection.normalise``.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator

# Characters that render as a blank but are letters to Unicode, and joiners that render as nothing.
FILLERS = re.compile("[\u115f\u1160\u3164\uffa0]")
JOINERS = re.compile("[\u034f\u180b-\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
# Negative circled (U+1F150) and negative squared (U+1F170) capitals have no decomposition.
_BOXED = {base + i: chr(ord("A") + i) for base in (0x1F150, 0x1F170) for i in range(26)}
_OBFUSCATED = re.compile(
    "[\u115f\u1160\u3164\uffa0\u034f\u180b-\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef\U0001f150-\U0001f189]"
)

# Words that make a text read as English: ROT13 of a sentence is decoded only when the decoded text
# holds several of them and the text as written holds almost none.
_ENGLISH = frozenset(
    "the a an and or to of is are be you your must should say answer reply respond tell ignore previous "
    "instructions value that this it in for with as not all now always response state give".split()
)
_WORD = re.compile(r"[A-Za-z']+")


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
