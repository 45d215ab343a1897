"""The quotable units of a passage read as plain sentences, whatever markup or glyphs the source had."""

from __future__ import annotations

import pytest

from rag_common.text.quotable import candidate_sentences
from rag_common.wire.messages import Passage

pytestmark = pytest.mark.unit


def units(text: str) -> list[str]:
    return [c.text for c in candidate_sentences([Passage(n=1, source="doc.md", section="Plans", text=text)])]


def test_markup_is_read_as_plain_text() -> None:
    text = (
        "The **Pro** plan costs $12 per [user](https://example.com/users) per month [2].\n\n"
        "> See the <b>billing</b> page for _annual_ prices and the `invoice` settings.\n\n"
        "An ![diagram](img.png) shows each of the plan's four views."
    )
    assert units(text) == [
        "The Pro plan costs $12 per user per month.",
        "See the billing page for annual prices and the invoice settings.",
        "An diagram shows each of the plan's four views.",
    ]


def test_glyphs_tabs_and_control_characters_are_cleaned_and_plain_lines_kept_as_they_are() -> None:
    text = "•\tGuests can view every board.\x07 ▪ Guests cannot edit cards or comments."
    assert units(text) == ["Guests can view every board.", "Guests cannot edit cards or comments."]
    plain = "Guests can view every board. Guests cannot edit cards or comments."
    assert units(plain) == ["Guests can view every board.", "Guests cannot edit cards or comments."]
