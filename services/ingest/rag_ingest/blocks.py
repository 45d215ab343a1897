"""What every parser produces: blocks of text that keep the heading path and page they came from."""

from dataclasses import dataclass
from typing import Literal

BlockKind = Literal["text", "table", "faq"]


@dataclass(frozen=True, slots=True)
class Block:
    """One piece of document content plus the context needed to cite it."""

    text: str
    heading_path: tuple[str, ...]  # e.g. ("Pricing", "Plans"); () before any heading
    page: int | None  # 1-based page of a PDF, slide of a presentation; None otherwise
    kind: BlockKind


class ParseError(ValueError):
    """The file is malformed or unreadable; the message says what is wrong."""
