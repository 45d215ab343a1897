"""The quotable units of a passage: whole sentences, list items and table rows, cleaned (pure).

The extractive answer quotes them (``rag_generator.extractive``) and ingest stores a vector for
each unit of a chunk (``rag_ingest.sentences``), so both must cut a text into exactly the same units:
this module is the one place that does. A unit is found again by its ``sentence_key``.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from rag_common.text.lines import (
    ANSWER_LINE,
    FENCE,
    HEADING_LINE,
    LIST_MARKER,
    QUESTION_LINE,
    TABLE_ROW,
    closes_fence,
)
from rag_common.text.sentences import ends_clause, ends_sentence, split_sentences
from rag_common.text.words import normal_words
from rag_common.wire.messages import Passage

KIND_SENTENCE, KIND_ITEM, KIND_ROW, KIND_CODE = "sentence", "item", "row", "code"
MAX_CODE_CHARS = 160  # a longer line of code is a program, not a value to quote
MAX_ITEM_CHARS = 400  # a longer list item is quoted sentence by sentence

# --- text cleaning ---------------------------------------------------------------------------
_EXCLUDED = "\ufffc"  # stands in for an excluded span; any unit touching it is dropped
_BULLET_GLYPHS = "\x7f•◦▪▫‣⁃●○■□◆◇►▸▹➢➤✓✔✗∙·\uf0b7\uf0a7\uf076\uf0d8\uf0fc"
_LINE_BULLET = re.compile(rf"^\s*[{re.escape(_BULLET_GLYPHS)}]+\s*")
_INLINE_BULLET = re.compile(rf"\s+[{re.escape(_BULLET_GLYPHS)}]+\s+")
_STRAY_GLYPH = re.compile(rf"[{re.escape(_BULLET_GLYPHS)}]")
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "\u00a0": " ", "\u2009": " "})
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
# Control characters (tab and newline are handled before), private-use glyphs of symbol fonts and
# invisible format characters: none of them is text a reader should see.
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ue000-\uf8ff\u200b-\u200f\u202a-\u202e\u2060-\u2064]")
# Any character the per-line clean-up of ``_clean_glyphs`` acts on: a bullet glyph, a tab, a control.
_GLYPH_OR_CONTROL = re.compile(f"[{re.escape(_BULLET_GLYPHS)}\t]|{_CONTROL.pattern}")

# A line of code or configuration that lost its fence at ingest: a command, a "key: value" or
# "key = value" setting with a machine-style key, an environment variable, a path, or a header
# with a placeholder. Prose never looks like this (a capitalised "Base URL: ..." stays a sentence).
_CODE_LINE = re.compile(
    r"^(?:\$\s+)?(?:npm|npx|pip|pipx|uv|curl|wget|sudo|export|docker|kubectl|helm|git|make|python3?|node|yarn|"
    r"brew|apt(?:-get)?|systemctl|cd|mkdir|cp|mv|ls|cat|chmod|ssh|go|cargo|java|dotnet|orbitly)\s+\S"
    r"|^[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+\s*[:=]\s*\S"
    r"|^[a-z][a-z0-9]*\s*=\s*\S"
    r"|^[A-Z][A-Z0-9]*_[A-Z0-9_]*=\S"
    r"|^[~/.]{1,2}/[\w./-]+$"
    r"|^[A-Z][\w-]*:\s.*<[^>\s]+>"
)

# Code flattened into a line of prose by a web page's text export ("messages = [ { "role" : "user" ,",
# "client . messages . create (", "from rouge import Rouge"): read as a line of code, never as a sentence.
_FLATTENED_CODE = re.compile(
    r"\b[a-z_]\w* = [\[{(\"']"  # an assignment of a literal: messages = [
    r"|\w \. \w+ \("  # a call spaced out token by token: client . messages . create (
    r"|\bfrom [a-z_][\w.]* import \w|^import [a-z_][\w.]*(?:\s|$)"  # a Python import
    r"|>>>\s*\w"  # an interpreter prompt
)
MAX_SYMBOL_SHARE = 0.3  # tokens without a letter or digit ("[", "{", ":", ",", "=") in a line of code
# A sentence whose author's full stop is followed by code in lowercase ("... reference summaries.
# from rouge import Rouge"): the splitter needs a capital after the stop, so the code is cut here.
_CODE_TAIL = re.compile(r"(?<=[.!?])\s+(?=(?:from [a-z_][\w.]* import|import [a-z_][\w.]*)\b)")
# At most this many words before a unit's own text make a heading glued to it ("Role names The
# Text Completions API expects...", "PDF Upload & SummarizationLearn how to upload PDFs...").
MAX_GLUED_HEADING_WORDS = 5
_GLUED_HEADING_REACH = 60  # characters into a unit where a glued heading may end

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_HTML_TAG = re.compile(r"</?([a-zA-Z][\w-]*)([^>]*)>")
# Elements of HTML itself. A tag of another name with no attributes is not markup but what the
# text is about ("combine multishot prompting (<examples>) with chain of thought (<thinking>)"):
# it is kept as written. MDX components ("<Tip>", "<Card title=...>") are capitalised or carry
# attributes, and go with the markup.
_HTML_ELEMENTS = frozenset(
    "a abbr address area article aside audio b bdi bdo blockquote body br button canvas caption center cite code "
    "col colgroup data dd del details dfn dialog div dl dt em embed fieldset figcaption figure font footer form "
    "h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins kbd label legend li link main map mark "
    "menu meta meter nav noscript object ol optgroup option output p param picture pre progress q rp rt ruby s "
    "samp script section select slot small source span strike strong style sub summary sup svg table tbody td "
    "template textarea tfoot th thead time title tr track tt u ul var video wbr path g".split()
)
_SPACE_BEFORE_STOP = re.compile(r"\s+(?=[.,;:!?)])")  # where a closing tag stood: "every region </span>."
_STRONG = re.compile(r"\*\*|__|`")
_EMPHASIS = re.compile(r"(?<![\w*])[*_](\S(?:[^*_]*?\S)?)[*_](?![\w*])")
# A document's own "[2]" would read as a citation of passage 2.
_FAKE_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")

# "Label: value" where the value is an address, a path or a number: a statement without a stop.
_KEY_VALUE = re.compile(r"^[A-Z][^:]{1,60}:\s+(?:https?://\S+|/[\w./{}-]+|\$?\d[\d.,]*\s*\w{0,8})$")
_ADDRESS = re.compile(r"\S+@\S+\.\w|https?://")
# A line ending in one of these words was cut by the page width, not by the author.
_CONTINUING = frozenset(
    "a an the and or but nor of to in on at by for with from into than that which who whose as is are was "
    "were be been has have had can will may must should would could not your our their its this these those "
    "per via if when while after before until up".split()
)
# Hyphenated line wraps of these stay hyphenated ("self-\nservice"); others close up ("re-\nfund").
_COMPOUND_PREFIXES = frozenset(
    "self well non built real high low full part cross two three four five end one long short time user third "
    "first read write sign opt add log check follow set".split()
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One quotable unit of passage ``n``: a sentence, a whole list item or a whole table row.

    ``context`` is the section and the heading above the unit: it helps decide relevance but is
    never quoted, since a heading alone answers nothing. The first unit under a heading (``lead``)
    is usually what the heading promises, so it is credited with the heading's words in full.
    """

    text: str
    n: int
    rank: int  # 0 for the retriever's best passage
    position: int  # order of the unit within its passage
    kind: str  # "sentence" | "item" | "row" | "code"
    context: str = ""
    lead: bool = False  # first unit under its heading: the one a heading or FAQ question introduces
    intro: str = ""  # the lead-in of a line of code or a list item ("Send the token in the header:"), if any
    title: str = ""  # the name of a card the source also glued in front of this unit, if any


# --- candidates ------------------------------------------------------------------------------


def candidate_sentences(
    passages: Sequence[Passage],
    *,
    excluded: Mapping[int, Sequence[tuple[int, int]]] | None = None,
    code: bool = False,
) -> list[Candidate]:
    """The readable units of each passage, in passage then document order.

    PDF line wraps are rejoined, glyphs and Markdown markup removed, table rows and list items
    kept whole; headings, fragments (a window cut mid-sentence, a page footer, a PDF table
    line), questions and anything overlapping an ``excluded`` character range of the passage's
    text are dropped, so whatever is picked from this list can be quoted as it stands.
    Excluded ranges are the injection spans found at ingest: they must never be quoted.
    With ``code``, the lines of fenced code blocks are units too (kind ``code``, verbatim): the
    answer to "what port..." is often a configuration line. Ingest stores no vector for them.
    """
    excluded = excluded or {}
    candidates: list[Candidate] = []
    for rank, passage in enumerate(passages):
        text = mask_spans(passage.text, excluded.get(passage.n, ()))
        position, last_heading = 0, None
        for kind, unit, heading, alone in _units(_clean_glyphs(text), passage.kind, code):
            if _readable(unit, kind, passage.section):
                context = _join(passage.section, heading)
                lead = heading != last_heading and alone
                intro = heading if kind in (KIND_CODE, KIND_ITEM) and heading.endswith(":") else ""
                candidates.append(Candidate(unit, passage.n, rank, position, kind, context, lead, intro))
                position, last_heading = position + 1, heading
    return candidates


def mask_spans(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    """Replace each excluded range by a marker on its own line, so nothing of it can be quoted.

    A range inside a table row takes the whole row: a row is quoted whole or not at all.
    """
    for start, end in sorted(ranges, reverse=True):
        start, end = max(0, start), min(len(text), end)
        if start >= end:
            continue
        if TABLE_ROW.match(_line_around(text, start)) or TABLE_ROW.match(_line_around(text, end - 1)):
            start = text.rfind("\n", 0, start) + 1
            end = len(text) if (stop := text.find("\n", end)) < 0 else stop
        text = f"{text[:start]}\n{_EXCLUDED}\n{text[end:]}"
    return text


def _line_around(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    stop = text.find("\n", index)
    return text[start : len(text) if stop < 0 else stop].strip()


def _clean_glyphs(text: str) -> str:
    """Plain characters: ligatures opened, invisible and control characters gone, bullets as "- "."""
    text = _INVISIBLE.sub("", text.translate(_LIGATURES)).replace("\r\n", "\n").replace("\r", "\n")
    if not _GLYPH_OR_CONTROL.search(text):  # nothing for the lines below to change
        return text
    lines = []
    for line in text.split("\n"):
        line = _LINE_BULLET.sub("- ", line) if _LINE_BULLET.match(line) else line
        line = _INLINE_BULLET.sub("\n- ", line)  # PDF extraction can put several bullets on a line
        line = _STRAY_GLYPH.sub(" ", line).replace("\t", " ")
        lines.append(_CONTROL.sub("", line))
    return "\n".join(lines)


def _units(text: str, passage_kind: str, code: bool = False) -> Iterator[tuple[str, str, str, bool]]:
    """(kind, text, heading above it, whether that heading stands alone) for every unit.

    Headings, FAQ questions, lead-ins such as "Every project has four views:" and short
    unpunctuated list entries ("2. How uptime is measured") become the heading of what follows.
    Several such lines in a row are more likely a PDF table flattened into lines than a heading,
    so they give context but do not make the next unit the heading's answer.
    """
    heading, in_a_row = "", 0

    def headed(line: str) -> None:
        nonlocal heading, in_a_row
        heading, in_a_row = line, in_a_row + 1

    for kind, line in _logical_lines(text, passage_kind, code):
        if kind == KIND_CODE:
            yield KIND_CODE, line, heading, in_a_row <= 1
            continue
        plain = _strip_markup(line)
        if kind in ("heading", "question"):
            headed(plain)
        elif kind == KIND_ROW:
            yield KIND_ROW, plain, heading, in_a_row <= 1
            in_a_row = 0
        elif kind == KIND_ITEM and len(plain) <= MAX_ITEM_CHARS:
            if ends_clause(plain) or ": " in plain or len(plain.split()) >= 5:
                yield KIND_ITEM, plain, heading, in_a_row <= 1
                in_a_row = 0
            else:
                headed(plain)
        elif _looks_like_heading(plain):
            headed(plain)
        else:
            for sentence in (part for s in split_sentences(plain) for part in _CODE_TAIL.split(s)):
                if flattened_code(sentence):
                    if code and len(sentence) <= MAX_CODE_CHARS:
                        yield KIND_CODE, sentence, heading, in_a_row <= 1
                elif sentence.endswith(":"):
                    headed(sentence)
                else:
                    yield KIND_SENTENCE, sentence, heading, in_a_row <= 1
                    in_a_row = 0


def _logical_lines(text: str, passage_kind: str, code: bool = False) -> Iterator[tuple[str, str]]:
    """Physical lines regrouped into paragraphs, list items, table rows, headings and questions.

    A line is joined to the one before when that one was cut by the page width rather than ended
    by its author (see ``_wrapped``); a list marker, a table row, a Q:/A: line or a blank line
    always starts a new unit.
    """
    lines = [line.strip() for line in text.split("\n")]
    wrap_width = max((len(line) for line in lines), default=0) * 0.75
    buffer, buffer_kind, last_line = "", "", ""
    fence: str | None = None  # the open code block's fence

    def flush() -> Iterator[tuple[str, str]]:
        nonlocal buffer, buffer_kind, last_line
        if buffer:
            yield buffer_kind, buffer
        buffer, buffer_kind, last_line = "", "", ""

    for line in lines:
        if fence is None and (opener := FENCE.match(line)):
            yield from flush()
            fence = opener.group(1)
        elif fence is not None and closes_fence(line, fence):
            fence = None
        elif fence is not None:
            # Code is read as an answer only for the value a line holds (a port, a command).
            if code and line and len(line) <= MAX_CODE_CHARS and not line.startswith(("#", "//", "<!--")):
                yield KIND_CODE, line
        elif not line:
            yield from flush()
        elif HEADING_LINE.match(line):
            yield from flush()
            yield "heading", line.lstrip("#").strip()
        elif code and len(line) <= MAX_CODE_CHARS and _CODE_LINE.match(line) and not ends_sentence(line):
            yield from flush()
            yield KIND_CODE, line
        elif QUESTION_LINE.match(line):
            yield from flush()
            buffer, buffer_kind = QUESTION_LINE.sub("", line), "question"
        elif (passage_kind == "table" and ": " in line) or TABLE_ROW.match(line):
            yield from flush()
            yield KIND_ROW, line
        elif ANSWER_LINE.match(line):
            yield from flush()
            buffer, buffer_kind = ANSWER_LINE.sub("", line), KIND_SENTENCE
        elif LIST_MARKER.match(line):
            yield from flush()
            buffer, buffer_kind = LIST_MARKER.sub("", line), KIND_ITEM
        elif buffer and _wrapped(last_line, line, wrap_width):
            buffer = _rejoin(buffer, line)
        else:
            yield from flush()
            buffer, buffer_kind = line, KIND_SENTENCE
        last_line = line if buffer else ""
    yield from flush()


def _wrapped(previous: str, line: str, wrap_width: float) -> bool:
    """Whether ``line`` continues the physical line ``previous``.

    It does when ``previous`` ends without closing punctuation and the next line starts in
    lowercase, or ``previous`` ends on a word or sign that cannot end a sentence, or it is a
    line of prose about as long as the longest line (a wrap at the page width). A short line
    followed by a capitalised one is a heading over its text, not a wrap. The marker of an
    excluded span absorbs the unfinished sentence before it, so no half of it is quoted.
    """
    if not previous or ends_clause(previous):
        return False
    if _EXCLUDED in line:
        return True
    words = previous.split()
    return (
        line[:1].islower()
        or line[:1] in "$(%&,"
        or words[-1].lower() in _CONTINUING
        or previous.endswith((",", "-", "&", "/"))
        or (len(previous) >= max(40.0, wrap_width) and len(words) > 10 and not _title_like(words))
    )


def _rejoin(previous: str, line: str) -> str:
    """Join a wrapped line; a word hyphenated by the wrap closes up unless it is a compound."""
    hyphenated = re.search(r"(\w+)-$", previous)
    if hyphenated and line[:1].islower():
        stem = hyphenated.group(1).lower()
        return previous + line if stem in _COMPOUND_PREFIXES else previous[:-1] + line
    return f"{previous} {line}"


def _markup_or_word(tag: re.Match[str]) -> str:
    name, attributes = tag.group(1), tag.group(2)
    if name.islower() and not attributes.strip() and name not in _HTML_ELEMENTS:
        return tag.group()
    return " "


def _strip_markup(text: str) -> str:
    # Each pattern only where its first character occurs: most lines hold no markup at all.
    if "[" in text:
        text = _LINK.sub(r"\1", _IMAGE.sub(r"\1", text))
    if "<" in text:
        text = _SPACE_BEFORE_STOP.sub("", _HTML_TAG.sub(_markup_or_word, text))
    if "*" in text or "_" in text or "`" in text:
        text = _EMPHASIS.sub(r"\1", _STRONG.sub("", text))
    text = text.lstrip("> ")
    if "[" in text:
        text = _FAKE_CITATION.sub("", text)
    return " ".join(text.split())


def flattened_code(text: str) -> bool:
    """Whether a line of prose is code that lost its line breaks and its fence.

    Web pages exported as text flatten their code blocks ("Shorthand Expanded messages = [ {
    "role" : "user" , ..."): an assignment of a literal, a call or an import spaced out token by
    token, or a line where brackets, quotes and commas standing alone are many, is not prose.
    """
    if _FLATTENED_CODE.search(text):
        return True
    tokens = text.split()
    symbols = sum(1 for token in tokens if not any(c.isalnum() for c in token))
    return len(tokens) >= 8 and symbols >= MAX_SYMBOL_SHARE * len(tokens)


def _looks_like_heading(text: str) -> bool:
    """A short line without closing punctuation: a title, not a statement.

    Not a ``key: value`` line giving an address, a path or a number ("Default port: 4222").
    """
    return not ends_clause(text) and len(text.split()) <= 10 and not _KEY_VALUE.match(text)


def _readable(unit: str, kind: str, section: str) -> bool:
    """Whether a unit can be quoted alone: a complete statement, not a heading or a fragment."""
    if not unit or _EXCLUDED in unit:
        return False
    words = unit.split()
    if kind == KIND_CODE:
        return any(c.isalnum() for c in unit) and len(unit) >= 3
    if kind == KIND_ROW:
        return len(words) >= 2
    if normal_words(unit) == normal_words(section) or unit.endswith("?"):
        return False
    if not unit[0].isupper() and not unit[0].isdigit() and unit[0] not in "$\"'“(":
        return kind == KIND_ITEM and len(words) >= 4  # a sentence starting lowercase was cut
    if _KEY_VALUE.match(unit):
        return True
    if ends_sentence(unit) or unit.endswith(":"):
        # "Email sales@orbitly.example." is whole: an address or a link carries the statement.
        return len(words) >= 3 or (len(words) == 2 and bool(_ADDRESS.search(unit)))
    if kind == KIND_ITEM:
        return len(words) >= 4 and not _title_like(words)
    # Unpunctuated prose survives only when long and mostly lowercase words: a footer, a title or
    # a PDF table line flattened into words is neither.
    lower = sum(1 for w in words if w.isalpha() and w.islower())
    return len(words) >= 12 and lower >= 0.6 * len(words)


def _title_like(words: Sequence[str]) -> bool:
    long_words = [w for w in words if len(w) > 3 and w[0].isalpha()]
    return bool(long_words) and sum(w[0].isupper() for w in long_words) >= 0.7 * len(long_words)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def unique_candidates(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Exact repeats (the same sentence in two passages) are kept once, from the better passage.

    A unit that is another unit with a heading glued in front ("Role names The Text Completions
    API expects...", "PDF Upload & SummarizationLearn how to upload PDFs..."; web pages exported
    as text repeat a tab's or a card's title before its text) is dropped for the clean one, which
    keeps the title when it is a name (``Candidate.title``): a card is quoted as "PDF Upload &
    Summarization: Learn how...", a tab's topic ("Role names") is left out.
    """
    texts = {c.text for c in candidates}
    # Only a unit that ends like another can be that one with a heading in front: the clean unit
    # has at least four words, so at least seven characters, and the two share their last six.
    endings = Counter(text[-6:] for text in texts)
    glued_of = {text: _glued_heading(text, texts) for text in texts if endings[text[-6:]] > 1}
    titles: dict[str, str] = {}
    for candidate in candidates:
        glued = glued_of.get(candidate.text)
        if glued is not None:
            titles.setdefault(*glued)
    seen: set[str] = set()
    unique = []
    for candidate in candidates:
        key = normal_words(candidate.text)
        if key not in seen and glued_of.get(candidate.text) is None:
            seen.add(key)
            title = titles.get(candidate.text, "")
            title = title if _names_something(title) else ""
            unique.append(replace(candidate, title=title) if title and not candidate.title else candidate)
    return unique


def _names_something(title: str) -> bool:
    """Whether a heading is a name rather than a topic: a capital after its first letter.

    "Claude Cookbooks", "GitHub prompting tutorial" and "PDF Upload & Summarization" name a card;
    "Role names" is a topic and would only lead the sentence after it astray.
    """
    words = title.split()
    return len(words) > 0 and (any(c.isupper() for c in words[0][1:]) or any(w[:1].isupper() for w in words[1:]))


def _glued_heading(text: str, units: set[str]) -> tuple[str, str] | None:
    """(the unit, the heading) when ``text`` is one of ``units`` after a heading glued in front of it.

    The heading is short (at most ``MAX_GLUED_HEADING_WORDS`` words), has no clause punctuation
    and does not end on a word that continues a sentence ("Note that ...").
    """
    for index in range(1, min(len(text), _GLUED_HEADING_REACH)):
        if not text[index].isupper() or not (text[index - 1] == " " or text[index - 1].islower()):
            continue
        rest = text[index:]
        if rest not in units or len(rest.split()) < 4:
            continue
        heading = text[:index].split()
        if (
            len(heading) <= MAX_GLUED_HEADING_WORDS
            and not re.search(r"[.!?:;,]", text[:index])
            and heading[-1].lower() not in _CONTINUING
        ):
            return rest, " ".join(heading)
    return None


def sentence_key(text: str) -> str:
    """A short stable key of a unit's exact text: how a stored vector or score finds its unit again.

    Eight hex characters: the units of one passage are a few dozen, so keys do not collide.
    """
    return hashlib.blake2b(text.encode("utf-8"), digest_size=4).hexdigest()
