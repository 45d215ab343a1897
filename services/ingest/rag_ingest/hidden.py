"""Text a file hides from its reader: what the parsers leave out, and why.

A file can carry text that no one reading it sees: a hidden Word run, white text on a white page,
1 pt text, a box off the slide, invisible PDF text, an HTML element styled away. Such text is where
planted instructions hide, and it is not content a reader could check an answer against. The parser
that sees the formatting leaves it out and counts it by reason; the counts reach the document's
status (``hidden_text``), so a user learns what was left out and why.
"""

from __future__ import annotations

import re
from collections import Counter

# Why a piece of text was left out, as the document's status names it.
NOT_DISPLAYED = "not displayed"
BACKGROUND_COLOURED = "coloured like its background"
TINY = "tiny text (2 pt or less)"
OFF_SCREEN = "positioned off-screen"
OFF_SLIDE = "off the slide"
INVISIBLE = "invisible text (PDF render mode 3)"
COLLAPSED = "collapsed <details>"
NOSCRIPT = "<noscript>"
FRONT_MATTER = "front matter"

# Text this size or smaller is unreadable on the page (points; HTML pixels alike).
TINY_POINTS = 2.0
# Two colours this close on every channel (0-255) cannot be told apart by a reader.
_SAME_COLOUR = 12

HiddenText = Counter[str]
"""Pieces of text left out, per reason (a paragraph, element or text run counts once)."""

RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)

_HEX = re.compile(r"^#?([0-9a-f]{3}|[0-9a-f]{6})$", re.IGNORECASE)
_NAMED: dict[str, RGB] = {
    "white": WHITE,
    "snow": (255, 250, 250),
    "ghostwhite": (248, 248, 255),
    "whitesmoke": (245, 245, 245),
    "ivory": (255, 255, 240),
    "black": (0, 0, 0),
}


def parse_colour(value: str) -> RGB | None:
    """An RGB triple from ``#fff``, ``#ffffff``, ``ffffff``, ``rgb(255, 255, 255)`` or a few names;
    None for anything else (an unknown colour is never taken for the background's)."""
    value = value.strip().lower()
    if value in _NAMED:
        return _NAMED[value]
    if match := _HEX.match(value):
        digits = match.group(1)
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    if value.startswith("rgb"):
        parts = re.findall(r"[\d.]+%?", value)
        if len(parts) >= 3:
            channels = [float(p[:-1]) * 2.55 if p.endswith("%") else float(p) for p in parts[:3]]
            return round(channels[0]), round(channels[1]), round(channels[2])
    return None


def same_colour(text: RGB | None, background: RGB | None) -> bool:
    """Whether text of colour ``text`` disappears on ``background`` (unset background: white paper)."""
    if text is None:
        return False
    ground = background if background is not None else WHITE
    return all(abs(a - b) <= _SAME_COLOUR for a, b in zip(text, ground, strict=True))


def describe(hidden: HiddenText) -> dict[str, int]:
    """The counts as the status shows them: reasons in a stable order, none when nothing was hidden."""
    return dict(sorted(hidden.items()))
