"""The parts of a course that are not its content (pure).

Learning objectives, exercises, front matter, navigation, references: no exam question is drawn
from them; a section path naming one (at any level: "Chapter 2 > Exercises") is left out.
"""

from __future__ import annotations

import re

NOT_CONTENT_SECTION = re.compile(
    r"\b(?:learning objectives?|objectives|learning outcomes?|outcomes|exercises?|lab work|activities|quiz|"
    r"review questions|self[- ]check|about this|front matter|preface|foreword|copyright|acknowledge?ments?|"
    r"table of contents|contents|navigation|see also|related (?:pages|links|topics)|next steps|"
    r"further reading|references|footnotes?|bibliography|changelog)\b",
    re.IGNORECASE,
)


def content_section(section: str) -> bool:
    """Whether a section path holds course content (not objectives, exercises, front matter...)."""
    return not NOT_CONTENT_SECTION.search(section)
