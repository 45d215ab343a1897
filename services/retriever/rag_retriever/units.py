"""Units as a teacher names them (pure): a document, a heading, or a document then a heading path.

A teacher writes what the material shows, not what the index keys: a heading with or without its
numbering ("Chapter 2: Networking", "Networking", "2.1 Cables" or "Cables"), a file name with or
without its extension ("networking.pptx", "networking"), a deck by its title (the first slide's,
which covers every slide: slides are flat sections). A name is matched at any depth of the heading
paths; when it names more than one part of the collection that none of the others holds, it is
ambiguous and the teacher is answered with the candidates, each written so that it names one part.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from rag_common.text.words import normal_words

UNIT_SEPARATOR = " > "
# Formats whose sections are slides under no common heading: the first slide's title names the deck.
DECK_SUFFIXES = frozenset({".pptx", ".ppt", ".odp", ".key"})

# A heading's numbering: "Chapter 2:", "Module 3 -", "Part IV.", "2.1", "3)", "IV." (then the topic).
_NUMBERING = re.compile(
    r"""^\s*(
        (?:chapter|section|module|unit|part|lesson|lecture|week|topic|appendix|slide)\s+
            (?:\d+(?:\.\d+)*|[ivxlcdm]+|[a-z])\b\.?
      | \d+(?:\.\d+)*[.)]?(?=\s)
      | [ivxlcdm]+[.)](?=\s)
    )\s*[:\-–—.]?\s*""",
    re.IGNORECASE | re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Section:
    """A section of a document as the collection holds it: where questions can be drawn from."""

    source: str
    path: tuple[str, ...]
    words: int
    chunks: int
    title: str = ""  # the deck's title (its first slide's), which names every section of it

    @property
    def heading(self) -> str:
        return UNIT_SEPARATOR.join(self.path)


def _path_of(payload: Mapping[str, Any]) -> tuple[str, ...]:
    path = payload.get("section_path") or []
    if path:
        return tuple(str(p) for p in path)
    section = str(payload.get("section", ""))
    return (section,) if section else ()


def document_titles(chunks: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each deck's title: the heading of its first chunk (a deck's slides share no parent heading)."""
    first: dict[str, tuple[int, str]] = {}
    for chunk in chunks:
        source = str(chunk.get("source", ""))
        if PurePosixPath(source.lower()).suffix not in DECK_SUFFIXES:
            continue
        index, path = int(chunk.get("chunk_index", 0)), _path_of(chunk)
        if path and (source not in first or index < first[source][0]):
            first[source] = (index, path[0])
    return {source: title for source, (_, title) in first.items()}


def sections_of(chunks: Sequence[Mapping[str, Any]]) -> list[Section]:
    """The sections of the collection's chunks, in a stable order (by source, then path)."""
    words: dict[tuple[str, tuple[str, ...]], int] = {}
    counts: dict[tuple[str, tuple[str, ...]], int] = {}
    for chunk in chunks:
        if chunk.get("boilerplate"):
            continue
        key = (str(chunk.get("source", "")), _path_of(chunk))
        words[key] = words.get(key, 0) + len(str(chunk.get("text", "")).split())
        counts[key] = counts.get(key, 0) + 1
    titles = document_titles(chunks)
    return [
        Section(source, path, words[(source, path)], counts[(source, path)], titles.get(source, ""))
        for source, path in sorted(words)
    ]


def heading_names(heading: str) -> set[str]:
    """What a heading answers to: as written, without its numbering, and its numbering alone
    ("Chapter 2: Networking" → "chapter 2 networking", "networking", "chapter 2")."""
    names = {normal_words(heading)}
    numbering = _NUMBERING.match(heading)
    if numbering and heading[numbering.end() :].strip():
        names |= {normal_words(heading[numbering.end() :]), normal_words(numbering.group(1))}
    return names - {""}


def _names_heading(part: str, heading: str) -> bool:
    """Whether a part of a unit names a heading (with or without either one's numbering)."""
    return normal_words(part) in heading_names(heading) or normal_words(heading) in heading_names(part)


def file_names(source: str) -> set[str]:
    """What a document answers to: its source as stored, its file name, each with or without extension."""
    name = PurePosixPath(source.replace("\\", "/"))
    return {normal_words(n) for n in (source, name.name, name.stem, str(name.with_suffix("")))} - {""}


def _match(source: str, path: Sequence[str], title: str, unit: str) -> tuple[str, ...] | None:
    """The part of the collection ``unit`` names that holds this section: ``(source,)`` for the
    whole document, ``(source, *headings)`` for the heading path it matched; None when it names none."""
    parts = [p.strip() for p in unit.split(">")]
    if len(parts) == 1 and (
        unit.strip() == source or normal_words(unit) in file_names(source) or (title and _names_heading(unit, title))
    ):
        return (source,)
    if len(parts) > 1 and normal_words(parts[0]) in file_names(source):
        rest = parts[1:]
        if len(path) >= len(rest) and all(_names_heading(p, h) for p, h in zip(rest, path, strict=False)):
            return (source, *path[: len(rest)])
        # else the first part may be a heading that shares the file's name ("Billing" in billing.md)
    for start in range(len(path) - len(parts) + 1):
        if all(_names_heading(p, h) for p, h in zip(parts, path[start:], strict=False)):
            return (source, *path[: start + len(parts)])
    return None


def in_unit(source: str, path: Sequence[str], unit: str, title: str = "") -> bool:
    """Whether a chunk of ``source`` under heading ``path`` belongs to ``unit``: the document itself
    (its source, its file name with or without extension, a deck's title), a heading path
    ('Billing > Refunds', matched from any level down, numbering optional), or a document then its
    path ('billing.md > Refunds')."""
    return not unit or _match(source, path, title, unit) is not None


def unit_sections(sections: Sequence[Section], unit: str) -> list[Section]:
    return [s for s in sections if in_unit(s.source, s.path, unit, s.title)]


def unit_candidates(sections: Sequence[Section], unit: str) -> list[str]:
    """The parts of the collection ``unit`` names, each written as a unit that names only it; one
    part held in another (a document and its own heading) counts once, as the wider one."""
    targets = {t for s in sections if (t := _match(s.source, s.path, s.title, unit)) is not None}
    widest = sorted(t for t in targets if not any(o != t and t[: len(o)] == o for o in targets))
    return [UNIT_SEPARATOR.join(t) for t in widest]
