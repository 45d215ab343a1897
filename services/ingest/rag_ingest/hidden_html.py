"""An HTML page without the text its styles hide from a reader, before trafilatura reads it.

trafilatura already drops ``display:none``, ``visibility:hidden`` and ``<noscript>``; it keeps text
that is 1 px high, white on white, pushed off-screen, or folded into a ``<details>``, and that is
where planted instructions hide. A closed ``<details>`` is left out whole: its summary is a label,
its body is what a reader sees only after opening it. Styles are read from inline ``style`` attributes and from
``<style>`` rules whose selectors are simple (``p``, ``.class``, ``#id``, ``p.class``, outside
``@media``). Not read: stylesheets in other files (never fetched), selectors with combinators or
pseudo-classes, specificity (rules apply in document order, then the inline style), ``clip``,
``transform`` and zero-sized boxes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from lxml import etree
from lxml import html as lxml_html

from rag_ingest.hidden import (
    BACKGROUND_COLOURED,
    COLLAPSED,
    FRONT_MATTER,
    NOSCRIPT,
    NOT_DISPLAYED,
    OFF_SCREEN,
    RGB,
    TINY,
    TINY_POINTS,
    HiddenText,
    parse_colour,
    same_colour,
)

_FRONT_MATTER = re.compile(rb"\A(?:\xef\xbb\xbf)?---[ \t]*\r?\n.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_AT_BLOCK = re.compile(r"@[a-z-]+[^{;]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", re.IGNORECASE)
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_SIMPLE_SELECTOR = re.compile(r"^([a-z][a-z0-9]*)?((?:[.#][\w-]+)*)$", re.IGNORECASE)
_LENGTH = re.compile(r"^(-?\d*\.?\d+)\s*(px|pt|em|rem|%)?$")
# An offset this far left or up puts a box off any screen (screen-reader-only text uses -9999px).
_OFF_SCREEN_PX = -500.0
_DEFAULT_FONT_PX = 16.0
_TRANSPARENT = (-1, -1, -1)
_PICTURE = (-2, -2, -2)  # a background image: its colours are unknown, so no text colour matches it


@dataclass(frozen=True, slots=True)
class _Inherited:
    colour: RGB | None = None
    background: RGB | None = None
    font_px: float = _DEFAULT_FONT_PX


@dataclass(frozen=True, slots=True)
class _Page:
    rules: dict[str, list[tuple[int, _Rule]]]
    keep_collapsed: bool


@dataclass(frozen=True, slots=True)
class _Rule:
    tag: str | None
    classes: frozenset[str]
    ident: str | None
    declarations: dict[str, str]


def strip_hidden(data: bytes, hidden: HiddenText, *, keep_collapsed: bool = False) -> bytes | str:
    """The page with hidden elements and hidden text removed, each counted in ``hidden`` by reason.

    ``keep_collapsed``: a closed ``<details>`` is read like an open one.

    A page lxml cannot read is returned as it is: trafilatura then reports what is wrong with it.
    """
    if match := _FRONT_MATTER.match(data):
        hidden[FRONT_MATTER] += 1
        data = data[match.end() :]
    try:
        root = lxml_html.document_fromstring(data)
    except (etree.ParserError, ValueError):
        return data
    rules = _style_rules(root)
    before = sum(hidden.values())
    _walk(root, _Inherited(), _Page(rules, keep_collapsed), hidden)
    if sum(hidden.values()) == before:
        return data  # nothing hidden: trafilatura reads the bytes exactly as uploaded
    # Text, not bytes: a <meta charset> naming a legacy encoding would misread UTF-8 bytes.
    return str(lxml_html.tostring(root, encoding="unicode"))


# The properties that can hide text; rules setting none of them are not kept.
_READ = frozenset(
    {
        "display",
        "visibility",
        "opacity",
        "position",
        "left",
        "top",
        "text-indent",
        "color",
        "background",
        "background-color",
        "background-image",
        "font-size",
    }
)


def _style_rules(root: lxml_html.HtmlElement) -> dict[str, list[tuple[int, _Rule]]]:
    """The simple rules of the page's ``<style>`` elements, in order, by the key an element is
    looked up by (``#id``, ``.class`` or the tag), so an element is matched against its own few."""
    rules: dict[str, list[tuple[int, _Rule]]] = {}
    order = 0
    for style in root.iter("style"):
        css = _AT_BLOCK.sub(" ", _CSS_COMMENT.sub(" ", style.text_content()))
        for selectors, body in _RULE.findall(css):
            declarations = {k: v for k, v in _declarations(body).items() if k in _READ}
            if not declarations:
                continue
            for selector in selectors.split(","):
                match = _SIMPLE_SELECTOR.match(selector.strip())
                if not match or not selector.strip():
                    continue
                parts = re.findall(r"[.#][\w-]+", match.group(2))
                ids = [p[1:] for p in parts if p.startswith("#")]
                rule = _Rule(
                    tag=match.group(1).lower() if match.group(1) else None,
                    classes=frozenset(p[1:] for p in parts if p.startswith(".")),
                    ident=ids[0] if ids else None,
                    declarations=declarations,
                )
                key = f"#{rule.ident}" if rule.ident else f".{min(rule.classes)}" if rule.classes else str(rule.tag)
                rules.setdefault(key, []).append((order, rule))
                order += 1
    return rules


def _declarations(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(";"):
        name, sep, value = part.partition(":")
        if sep:
            out[name.strip().lower()] = value.replace("!important", "").strip().lower()
    return out


def _style_of(element: lxml_html.HtmlElement, rules: dict[str, list[tuple[int, _Rule]]]) -> dict[str, str]:
    classes = set((element.get("class") or "").split())
    ident = element.get("id")
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    style: dict[str, str] = {}
    keys = [tag, *(f".{c}" for c in classes), *([f"#{ident}"] if ident else [])]
    candidates = sorted((found for key in keys for found in rules.get(key, ())), key=lambda found: found[0])
    for _, rule in candidates:
        if (
            (rule.tag is None or rule.tag == tag)
            and rule.classes <= classes
            and (rule.ident is None or rule.ident == ident)
        ):
            style.update(rule.declarations)
    style.update(_declarations(element.get("style") or ""))
    return style


def _walk(element: lxml_html.HtmlElement, inherited: _Inherited, page: _Page, hidden: HiddenText) -> None:
    for child in list(element):
        if not isinstance(child.tag, str):  # a comment or processing instruction: trafilatura drops them
            continue
        style = _style_of(child, page.rules)
        reason = _hidden_box(child, style, page.keep_collapsed)
        if reason is not None:
            if child.text_content().strip():
                hidden[reason] += 1
            child.drop_tree()  # its tail is text of the parent, and stays
            continue
        state = _inherit(style, inherited)
        text_reason = _hidden_text(state)
        if text_reason is not None:
            if _own_text(child).strip():
                hidden[text_reason] += 1
            child.text = None
            for grandchild in child:
                grandchild.tail = None
        _walk(child, state, page, hidden)


def _own_text(element: lxml_html.HtmlElement) -> str:
    return (element.text or "") + "".join(c.tail or "" for c in element)


def _hidden_box(element: lxml_html.HtmlElement, style: dict[str, str], keep_collapsed: bool) -> str | None:
    tag = element.tag.lower()
    if tag == "noscript":
        return NOSCRIPT
    if (
        tag == "details" and element.get("open") is None and not keep_collapsed
    ):  # only its summary shows until a reader opens it
        return COLLAPSED
    if element.get("hidden") is not None or style.get("display") == "none":
        return NOT_DISPLAYED
    if style.get("visibility") in ("hidden", "collapse") or _number(style.get("opacity")) == 0:
        return NOT_DISPLAYED
    if style.get("position") in ("absolute", "fixed") and any(
        (px := _pixels(style.get(side), _DEFAULT_FONT_PX)) is not None and px <= _OFF_SCREEN_PX
        for side in ("left", "top")
    ):
        return OFF_SCREEN
    indent = _pixels(style.get("text-indent"), _DEFAULT_FONT_PX)
    if indent is not None and indent <= _OFF_SCREEN_PX:
        return OFF_SCREEN
    return None


def _inherit(style: dict[str, str], inherited: _Inherited) -> _Inherited:
    state = inherited
    if "color" in style:
        state = replace(state, colour=_colour(style["color"]) or state.colour)
    ground = style.get("background-color") or style.get("background")
    if "url(" in (style.get("background") or "") + (style.get("background-image") or ""):
        state = replace(state, background=_PICTURE)
    elif ground:
        colour = _colour(ground)
        if colour is not None and colour != _TRANSPARENT:
            state = replace(state, background=colour)
    size = _pixels(style.get("font-size"), inherited.font_px)
    if size is not None:
        state = replace(state, font_px=size)
    return state


def _hidden_text(state: _Inherited) -> str | None:
    if state.font_px <= TINY_POINTS:
        return TINY
    if state.colour == _TRANSPARENT or same_colour(state.colour, state.background):
        return BACKGROUND_COLOURED
    return None


def _colour(value: str) -> RGB | None:
    """The first colour in a value (``background`` shorthand too); ``_TRANSPARENT`` for no paint."""
    if value.strip() == "transparent":
        return _TRANSPARENT
    for token in re.findall(r"rgba?\([^)]*\)|#[0-9a-f]+|[a-z]+", value):
        if token.startswith("rgba"):
            parts = re.findall(r"[\d.]+", token)
            if len(parts) == 4 and float(parts[3]) == 0:
                return _TRANSPARENT
        colour = parse_colour(token)
        if colour is not None:
            return colour
    return None


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _pixels(value: str | None, parent_px: float) -> float | None:
    """A CSS length in pixels (pt counted as px: both hide text at 2 or less); None when not a length."""
    if not value:
        return None
    match = _LENGTH.match(value.strip())
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2) or "px"
    if unit == "em":
        return number * parent_px
    if unit == "rem":
        return number * _DEFAULT_FONT_PX
    if unit == "%":
        return number * parent_px / 100
    return number
