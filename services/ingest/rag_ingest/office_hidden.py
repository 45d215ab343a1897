"""What a Word or PowerPoint reader does not see: hidden runs, white or tiny text, boxes off the slide.

Read through python-docx's and python-pptx's font API (``hidden``, ``size``, ``color``), with the
run's character style and the paragraph's style as fallbacks in Word. The background a colour is
compared with is the nearest one set: the run's shading or highlight, the table cell's or the
paragraph's shading, the page colour, else white paper (Word); the cell's or the shape's solid
fill, the slide's background, else white (PowerPoint). A picture under the text is not seen, so
white text on a dark picture with no fill of its own counts as hidden.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from docx.enum.text import WD_COLOR_INDEX
from docx.text.hyperlink import Hyperlink
from docx.text.paragraph import Paragraph as WordParagraph
from docx.text.run import Run as WordRun
from pptx.enum.dml import MSO_COLOR_TYPE, MSO_FILL, MSO_THEME_COLOR
from pptx.shapes.base import BaseShape
from pptx.text.text import TextFrame

from rag_ingest.hidden import (
    BACKGROUND_COLOURED,
    NOT_DISPLAYED,
    OFF_SLIDE,
    RGB,
    TINY,
    TINY_POINTS,
    WHITE,
    HiddenText,
    parse_colour,
    same_colour,
)

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_PAINTED: RGB = (-2, -2, -2)  # a highlight or fill of a colour not read: no text colour matches it
_MAX_STYLE_DEPTH = 8
_LIGHT_THEME = {"BACKGROUND_1", "LIGHT_1"}  # white in Office's default themes


# --- Word ----------------------------------------------------------------------------------------


def page_background(document_element: Any) -> RGB | None:
    """The Word page colour (``w:background``), None when the page is plain white paper."""
    values = document_element.xpath("./w:background/@w:color")
    return _fill(values[0]) if values else None


def shading(element: Any, path: str) -> RGB | None:
    """The fill of a ``w:shd`` under ``element`` (``path`` is ``w:tcPr`` or ``w:pPr``)."""
    values = element.xpath(f"./{path}/w:shd/@w:fill")
    return _fill(values[0]) if values else None


def _fill(value: str) -> RGB | None:
    return None if value.lower() == "auto" else parse_colour(value)


def visible_paragraph_text(paragraph: WordParagraph, page: RGB | None, hidden: HiddenText) -> str:
    """The paragraph's text without the runs a reader does not see; each reason counted once.

    ``page``: the page colour (``page_background``), the ground where no paragraph or cell shading is set.
    """
    kept: list[str] = []
    reasons: set[str] = set()
    for item in paragraph.iter_inner_content():
        runs = item.runs if isinstance(item, Hyperlink) else [item]
        for run in runs:
            reason = _word_run_reason(run, paragraph, _shaded(run, page))
            if reason is None:
                kept.append(run.text)
            elif run.text.strip():
                reasons.add(reason)
    hidden.update(reasons)
    return "".join(kept)


def _shaded(run: WordRun, page: RGB | None) -> RGB | None:
    """The shading nearest a run: its paragraph's, then its table cell's, then the page's."""
    for ancestor in run.element.iterancestors():
        if ancestor.tag == f"{_W}p" and (ground := shading(ancestor, "w:pPr")) is not None:
            return ground
        if ancestor.tag == f"{_W}tc" and (ground := shading(ancestor, "w:tcPr")) is not None:
            return ground
    return page


def _styles(start: Any) -> Iterator[Any]:
    style = start
    for _ in range(_MAX_STYLE_DEPTH):
        if style is None:
            return
        yield style
        style = style.base_style


def _word_font_value(run: WordRun, paragraph: WordParagraph, name: str) -> Any:
    """A font property as Word applies it: the run's own, its character style's, its paragraph style's."""
    value = getattr(run.font, name)
    if value is not None:
        return value
    for style in (*_styles(run.style), *_styles(paragraph.style)):
        value = getattr(style.font, name, None)
        if value is not None:
            return value
    return None


def _word_colour(colour: Any) -> RGB | None:
    if colour is None or colour.type is None:
        return None
    if colour.rgb is not None:
        return (colour.rgb[0], colour.rgb[1], colour.rgb[2])
    if colour.theme_color is not None and colour.theme_color.name in _LIGHT_THEME:
        return WHITE
    return None


def _word_run_reason(run: WordRun, paragraph: WordParagraph, ground: RGB | None) -> str | None:
    if _word_font_value(run, paragraph, "hidden"):
        return NOT_DISPLAYED
    size = _word_font_value(run, paragraph, "size")
    if size is not None and size.pt <= TINY_POINTS:
        return TINY
    colour = _word_colour(_word_font_value(run, paragraph, "color"))
    highlight = run.font.highlight_color
    if highlight is not None and highlight != WD_COLOR_INDEX.AUTO:
        ground = WHITE if highlight == WD_COLOR_INDEX.WHITE else _PAINTED
    ground = shading(run.element, "w:rPr") or ground
    return BACKGROUND_COLOURED if same_colour(colour, ground) else None


# --- PowerPoint ----------------------------------------------------------------------------------


def off_slide(shape: BaseShape, width: int | None, height: int | None) -> bool:
    """Whether a shape lies wholly outside the slide (a placeholder without its own position never does)."""
    left, top, cx, cy = shape.left, shape.top, shape.width, shape.height
    if left is None or top is None or width is None or height is None:
        return False
    return left >= width or top >= height or left + (cx or 0) <= 0 or top + (cy or 0) <= 0


def solid_fill(fill: Any) -> RGB | None:
    """The colour of a solid fill (a shape's, a cell's, a slide background's); a non-solid one is unknown."""
    try:
        if fill.type is None or fill.type == MSO_FILL.BACKGROUND:  # no fill of its own: see-through
            return None
        if fill.type != MSO_FILL.SOLID:
            return _PAINTED
        return _pptx_colour(fill.fore_color) or _PAINTED
    except (AttributeError, TypeError, ValueError):  # a fill python-pptx cannot describe
        return _PAINTED


def _pptx_colour(colour: Any) -> RGB | None:
    try:
        if colour.type == MSO_COLOR_TYPE.RGB:
            rgb = colour.rgb
            return (rgb[0], rgb[1], rgb[2])
        if colour.type == MSO_COLOR_TYPE.SCHEME and colour.theme_color in (
            MSO_THEME_COLOR.BACKGROUND_1,
            MSO_THEME_COLOR.LIGHT_1,
        ):
            return WHITE
    except (AttributeError, TypeError, ValueError):
        return None
    return None


def visible_frame_paragraphs(frame: TextFrame, ground: RGB | None, hidden: HiddenText) -> list[tuple[int, str]]:
    """(level, text) of each paragraph of a text frame, without its white or tiny runs."""
    out: list[tuple[int, str]] = []
    for paragraph in frame.paragraphs:
        kept: list[str] = []
        reasons: set[str] = set()
        runs = list(paragraph.runs)
        if not runs:  # fields and breaks only: python-pptx's paragraph text
            out.append((paragraph.level, paragraph.text))
            continue
        for run in runs:
            size = run.font.size
            if size is not None and size.pt <= TINY_POINTS:
                reason: str | None = TINY
            else:
                reason = BACKGROUND_COLOURED if same_colour(_pptx_colour(run.font.color), ground) else None
            if reason is None:
                kept.append(run.text)
            elif run.text.strip():
                reasons.add(reason)
        hidden.update(reasons)
        out.append((paragraph.level, "".join(kept)))
    return out


def hide_shape(hidden: HiddenText, text: str) -> None:
    """Count a shape left out because it is off the slide (only when it holds text)."""
    if text.strip():
        hidden[OFF_SLIDE] += 1
