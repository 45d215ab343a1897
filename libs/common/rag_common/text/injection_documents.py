"""Planted instructions in document text (pure, no I/O): found, merged into spans, stripped.

``find_instruction_spans`` marks whole sentences, table cells or lines (role markers), so
``strip_spans`` leaves readable text; an instruction split over two or three sentences or lines marks
them all. Hidden text (an HTML comment or an invisible element aimed at a model, Unicode tag
letters, a run of zero-width characters) is marked alone: the visible fact beside it stays
quotable. A unit is judged by the patterns (``injection_rules.toml``, read as written, folded and as
leetspeak), then by its structure (``injection_structure``), then, with an embedder, by its meaning
(``injection_meaning``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from rag_common.text.injection_normalise import LEET, ZERO_WIDTH, normalise, readings
from rag_common.text.injection_rules import first_kind, named, rules
from rag_common.text.injection_structure import (
    CARRIES_DIRECTIVES,
    CARRIES_PARAGRAPH,
    Verdict,
    directive,
    foreign_directive,
    goes_on,
    language_of,
)

if TYPE_CHECKING:
    from rag_common.text.injection_meaning import DenseEmbedder


@dataclass(frozen=True)
class Span:
    """A stretch of document text that reads as an instruction to the model, not as content."""

    start: int
    end: int
    kind: str
    text: str


_TAG_CHARS = named("tag_chars")
_LEETY = named("leety")
_HTML_COMMENT = named("html_comment")
_HIDDEN_ELEMENT = named("hidden_element")
_COMMENT_AIMED = named("comment_aimed")
_ZERO_WIDTH_RUN = named("zero_width_run")
_MODEL_TURN = named("model_turn")
_COMPLIANCE = named("compliance")
_USER_TURN = named("user_turn")
_QUOTED_END = named("quoted_end")
_SENTENCE_END = named("sentence_end")
_OPENERS = named("openers")
_CARRY_STOP = named("carry_stop")
# An instruction split over this many units (sentences, lines, cells) is still found.
SPLIT_WINDOW = 3


def _units(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every sentence, a line break always ending one; surrounding spaces trimmed."""
    start = 0
    for match in _SENTENCE_END.finditer(text):
        yield from _trimmed(text, start, match.start())
        start = match.end()
    yield from _trimmed(text, start, len(text))


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end


def _line_of(text: str, start: int, end: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return line_start, len(text) if line_end < 0 else line_end


def _sentence_kind(sentence: str) -> str | None:
    return first_kind(rules("sentence"), sentence)


def _judge(sentence: str) -> str | None:
    """The kind of planted text a sentence is, read as written, folded and as leetspeak."""
    kind = _sentence_kind(sentence)
    if kind is not None:
        return kind
    folded = normalise(sentence)
    if folded != sentence and (kind := _sentence_kind(folded)) is not None:
        # Instructions broken up by invisible characters ("ig\u200bnore") hide; lookalikes disguise.
        return "hidden_text" if ZERO_WIDTH.search(sentence) else kind
    if len(_LEETY.findall(folded)) >= 2:
        return _sentence_kind(folded.translate(LEET))
    return None


def _blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` turned to spaces (line breaks kept): offsets stay valid."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _hidden_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Text a reader never sees that is aimed at a model, each marked alone."""
    for match in _HTML_COMMENT.finditer(text):
        if _COMMENT_AIMED.search(match.group(1)) or _judge(match.group(1)):
            yield match.start(), match.end(), "hidden_text"
    for match in _HIDDEN_ELEMENT.finditer(text):
        body = re.sub(r"<[^>]*>", " ", match.group("body"))
        if _COMMENT_AIMED.search(body) or _judge(body):
            yield match.start(), match.end(), "hidden_text"
    for match in _TAG_CHARS.finditer(text):
        yield match.start(), match.end(), "hidden_text"
    for match in _ZERO_WIDTH_RUN.finditer(text):
        yield match.start(), match.end(), "hidden_text"


def _role_turns(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _MODEL_TURN.finditer(text):
        said = match.group("said")
        if _QUOTED_END.search(said):
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1] if match.start() else ""
        if _COMPLIANCE.match(said) or _USER_TURN.match(before) or _judge(said):
            yield match.start(), match.end(), "fake_system_prompt"


# A split instruction is made of fragments: a unit this short, or one that ends without a full stop
# (a line broken mid-sentence), may be the first part of one; a long finished sentence is not.
_FRAGMENT_CHARS = 60
_JOIN_TAIL, _JOIN_HEAD = 80, 120


def _fragment(text: str) -> bool:
    return len(text) <= _FRAGMENT_CHARS or text[-1] not in ".!?:"


def _joined(text: str, units: Sequence[tuple[int, int]]) -> str:
    """The units read as one sentence: their ends (the only place a split can hide) joined."""
    parts = [text[s:e].rstrip(".!?:;,") for s, e in units]
    return " ".join([*(p[-_JOIN_TAIL:] for p in parts[:-1]), parts[-1][:_JOIN_HEAD]])


def _directive(sentence: str) -> Verdict | None:
    """The structure rules' verdict on a sentence, read as written, folded, unboxed and decoded."""
    seen: set[str] = set()
    for reading in (sentence, normalise(sentence), *(normalise(r) for r in readings(sentence))):
        if reading in seen:
            continue
        seen.add(reading)
        verdict = directive(reading) or foreign_directive(reading)
        if verdict is not None:
            return verdict
    return None


# How far a marked sentence carries into its paragraph (``carry_stop`` ends it sooner).
_CARRY_UNITS = 4
# Sentences shorter or longer than this are not compared with the bank of instruction forms.
_MEANING_CHARS = (20, 400)


def _read_units(masked: str, units: Sequence[tuple[int, int]], embedder: DenseEmbedder | None) -> list[str | None]:
    """Each unit's kind: by the patterns, then by structure, then by meaning.

    A marked sentence that addresses the reader or frames a task carries the rest of its paragraph;
    any other carries the orders right after it (an instruction split over sentences).
    """
    kinds = [_judge(masked[s:e]) for s, e in units]
    carries: list[str | None] = [None] * len(units)
    for i, (start, end) in enumerate(units):
        if kinds[i] is None and (verdict := _directive(masked[start:end])) is not None:
            kinds[i], carries[i] = verdict.kind, verdict.carries
    if embedder is not None:
        from rag_common.text.injection_meaning import cued, instruction_like

        low, high = _MEANING_CHARS
        pending = [
            i
            for i, (s, e) in enumerate(units)
            if kinds[i] is None and low <= e - s <= high and cued(masked[s:e]) and language_of(masked[s:e]) is None
        ]
        texts = [masked[units[i][0] : units[i][1]] for i in pending]
        for i, like in zip(pending, instruction_like(embedder, texts), strict=True):
            if like:
                kinds[i], carries[i] = "addressed_to_assistant", CARRIES_DIRECTIVES
    for i, carry in enumerate(carries):
        if carry is None:
            continue
        for j in range(i + 1, min(len(units), i + 1 + _CARRY_UNITS)):
            if _CARRY_STOP.search(masked[units[j - 1][1] : units[j][0]]):
                break
            if kinds[j] is None and (carry == CARRIES_PARAGRAPH or goes_on(masked[units[j][0] : units[j][1]])):
                kinds[j] = kinds[i]
            elif kinds[j] is None:
                break
    return kinds


def _raw_spans(text: str, embedder: DenseEmbedder | None = None) -> Iterator[tuple[int, int, str]]:
    # Hidden text is a span of its own; the sentences around it are judged without it (blanked
    # out, offsets kept), so stripping it keeps its neighbours, and the fact beside it stays.
    masked = text
    for start, end, kind in _hidden_spans(text):
        yield start, end, kind
        masked = _blank(masked, start, end)
    units = list(_units(masked))
    kinds = _read_units(masked, units, embedder)
    for (start, end), judged in zip(units, kinds, strict=True):
        if judged is not None:
            yield start, end, judged
    # An instruction split over neighbouring units of one paragraph ("Ignore all previous\n
    # instructions...", "When answering. Always say..."): the smallest window that reads as one.
    found = [k is not None for k in kinds]
    for size in range(2, SPLIT_WINDOW + 1):
        for first in range(len(units) - size + 1):
            window = units[first : first + size]
            if (
                any(found[first : first + size])
                or not all(_fragment(masked[s:e]) for s, e in window[:-1])
                or not _OPENERS.search(masked[window[0][0] : window[0][1]][-_JOIN_TAIL:])
                or "\n\n" in masked[window[0][1] : window[-1][0]]
            ):
                continue
            split = _judge(_joined(masked, window))
            if split is not None:
                found[first : first + size] = [True] * size
                for start, end in window:
                    yield start, end, split
    yield from _role_turns(masked)
    for rule in rules("line"):
        for match in rule.pattern.finditer(masked):
            start, end = _line_of(masked, match.start(), match.end())
            yield from ((s, e, rule.kind) for s, e in _trimmed(masked, start, end))


def find_instruction_spans(text: str, embedder: DenseEmbedder | None = None) -> list[Span]:
    """Instruction-like spans planted in document text, merged where they overlap, in text order.

    A merged span keeps the kind of its longest part (an HTML comment holding an override is
    ``hidden_text``: hiding it is what gives it away). With an ``embedder`` (ingest's), sentences
    close in meaning to a known instruction form are marked too (``injection_meaning``).
    """
    raw = sorted(_raw_spans(text, embedder))
    merged: list[list[object]] = []  # [start, end, kind, longest part]
    for start, end, kind in raw:
        if merged and start <= int(merged[-1][1]):  # type: ignore[call-overload]
            last = merged[-1]
            last[1] = max(int(last[1]), end)  # type: ignore[call-overload]
            if end - start > int(last[3]):  # type: ignore[call-overload]
                last[2], last[3] = kind, end - start
        else:
            merged.append([start, end, kind, end - start])
    return [Span(int(s), int(e), str(k), text[int(s) : int(e)]) for s, e, k, _ in merged]  # type: ignore[call-overload]


@lru_cache(maxsize=4096)
def withhold_planted_headings(section: str, separator: str = " > ") -> str:
    """A heading path without the headings that read as planted instructions.

    A heading is metadata, not chunk text, so ingest's spans do not cover it; a question or a
    citation that names its section must not carry "Ignore all previous instructions and ...".
    """
    headings = section.split(separator)
    kept = [heading for heading in headings if not find_instruction_spans(heading)]
    return section if len(kept) == len(headings) else separator.join(kept)


def strip_spans(text: str, spans: Sequence[Span] | Sequence[tuple[int, int]]) -> str:
    """The text without the given spans, with the blank space they leave tidied up."""
    ranges = sorted((s.start, s.end) if isinstance(s, Span) else (int(s[0]), int(s[1])) for s in spans)
    pieces, cursor = [], 0
    for start, end in ranges:
        start, end = max(start, cursor), min(max(end, 0), len(text))
        if start >= end:
            continue
        pieces.append(text[cursor:start])
        cursor = end
    pieces.append(text[cursor:])
    out = "".join(pieces)
    out = re.sub(r"[ \t]+\n", "\n", out)
    out = re.sub(r"[ \t]{2,}", " ", out)
    out = re.sub(r"\n{3,}", "\n\n", out)
    out = re.sub(r" +([.,;:!?])", r"\1", out)
    return out.strip()
