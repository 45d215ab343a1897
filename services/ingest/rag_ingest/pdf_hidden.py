"""A PDF page's text without what a reader does not see: invisible, white or tiny text.

pypdf reports every text-drawing operator before it runs (``visitor_operand_before``, with the
current transformation and text matrices) and then the text it extracted (``visitor_text``), so the
graphics state a reader's viewer would paint with is tracked here: the fill colour (``g``, ``rg``,
``k``, ``sc``/``scn``), the render mode (``Tr``), the font size (``Tf`` scaled by both matrices),
saved and restored with ``q``/``Q``. pypdf is enough for this: no second PDF library is needed.

Left out, with their reason counted:

- render mode 3 or 7 (neither filled nor stroked), unless the page paints an image first: that
  is how a scan's OCR layer lies over the picture, and it is the page's only text;
- fill-only text in white (or nearly) that lies on no filled area or image painted before it;
- text 2 pt high or less.

pypdf hands over text in pieces that may join several operators; a piece is left out when any of
its operators drew hidden text, so hidden text cannot ride along with a visible word. Not seen:
text drawn outside the page's box, under an opaque shape drawn later, or clipped away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pypdf import PageObject

from rag_ingest.hidden import BACKGROUND_COLOURED, INVISIBLE, RGB, TINY, TINY_POINTS, WHITE, HiddenText, same_colour

_DRAW = frozenset({b"Tj", b"TJ", b"'", b'"'})
_FILL = frozenset({b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*"})
_PATH_END = frozenset({b"n", b"S", b"s"})
_IMAGE = frozenset({b"Do", b"INLINE IMAGE"})
_NO_PAINT = frozenset({3, 7})
_FILL_ONLY = frozenset({0, 4})

Box = tuple[float, float, float, float]
Matrix = list[float]


@dataclass
class _Graphics:
    fill: RGB = (0, 0, 0)
    render: int = 0
    font_size: float = 0.0


@dataclass
class _Page:
    hidden: HiddenText
    state: _Graphics = field(default_factory=_Graphics)
    saved: list[_Graphics] = field(default_factory=list)
    path: list[Box] = field(default_factory=list)
    painted: list[Box] = field(default_factory=list)
    images: bool = False
    pending: list[str | None] = field(default_factory=list)
    pieces: list[tuple[str, bool]] = field(default_factory=list)

    def operator(self, op: bytes, args: list[Any], cm: Matrix, tm: Matrix) -> None:
        state = self.state
        if op == b"q":
            self.saved.append(_Graphics(state.fill, state.render, state.font_size))
        elif op == b"Q" and self.saved:
            self.state = self.saved.pop()
        elif op == b"Tf" and len(args) >= 2:
            state.font_size = _float(args[1], state.font_size)
        elif op == b"Tr" and args:
            state.render = int(_float(args[0], 0))
        elif op in (b"g", b"rg", b"k", b"sc", b"scn"):
            state.fill = _colour(args, state.fill)
        elif op in (b"cs",):
            state.fill = (0, 0, 0)
        elif op == b"re" and len(args) == 4:
            x, y, w, h = (_float(a, 0.0) for a in args)
            self.path.append(_box(cm, x, y, x + w, y + h))
        elif op in _FILL:
            if not same_colour(state.fill, WHITE):
                self.painted.extend(self.path)
            self.path.clear()
        elif op in _PATH_END:
            self.path.clear()
        elif op in _IMAGE:
            self.images = True
            self.painted.append(_box(cm, 0.0, 0.0, 1.0, 1.0))
        elif op in _DRAW:
            self.pending.append(self._reason(cm, tm))

    def _reason(self, cm: Matrix, tm: Matrix) -> str | None:
        state = self.state
        if state.render in _NO_PAINT and not self.images:
            return INVISIBLE
        size = state.font_size * math.hypot(tm[2], tm[3]) * math.hypot(cm[2], cm[3])
        if 0 < size <= TINY_POINTS:
            return TINY
        if state.render in _FILL_ONLY and same_colour(state.fill, WHITE):
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            if not any(x0 <= x <= x1 and y0 <= y <= y1 for x0, y0, x1, y1 in self.painted):
                return BACKGROUND_COLOURED
        return None

    def text(self, text: str, *_: Any) -> None:
        reasons = [r for r in self.pending if r is not None]
        self.pending.clear()
        if reasons and text.strip():
            self.hidden[reasons[0]] += 1
        self.pieces.append((text, bool(reasons)))


def visible_page_text(page: PageObject, hidden: HiddenText) -> str:
    """The page's extracted text, less the pieces a reader does not see (counted in ``hidden``).

    A page with nothing hidden keeps pypdf's own text exactly.
    """
    seen = _Page(hidden)
    text = page.extract_text(visitor_operand_before=seen.operator, visitor_text=seen.text) or ""
    if not any(gone and piece.strip() for piece, gone in seen.pieces):
        return text
    kept: list[str] = []
    dropped = False
    for piece, gone in seen.pieces:
        if not piece:
            continue
        if gone:
            dropped = True
        elif not (dropped and piece == "\n" and kept and kept[-1].endswith("\n")):  # no blank line where it was
            kept.append(piece)
            dropped = False
    return "".join(kept)


def _float(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _colour(args: list[Any], current: RGB) -> RGB:
    """An RGB fill from gray, RGB or CMYK operands; a pattern or named colour keeps it unknown (black)."""
    values = [_float(a, -1.0) for a in args]
    if not values or any(v < 0 for v in values):
        return (0, 0, 0) if args else current
    if len(values) == 1:
        gray = round(values[0] * 255)
        return gray, gray, gray
    if len(values) == 3:
        return round(values[0] * 255), round(values[1] * 255), round(values[2] * 255)
    if len(values) == 4:
        c, m, y, k = values
        return round(255 * (1 - c) * (1 - k)), round(255 * (1 - m) * (1 - k)), round(255 * (1 - y) * (1 - k))
    return current


def _box(cm: Matrix, x0: float, y0: float, x1: float, y1: float) -> Box:
    """A rectangle in user space mapped to the page by ``cm`` (scale and shift; a rotation's bounding box)."""
    xs = [x * cm[0] + y * cm[2] + cm[4] for x, y in ((x0, y0), (x1, y0), (x0, y1), (x1, y1))]
    ys = [x * cm[1] + y * cm[3] + cm[5] for x, y in ((x0, y0), (x1, y0), (x0, y1), (x1, y1))]
    return min(xs), min(ys), max(xs), max(ys)
