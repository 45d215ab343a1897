"""A parser of Moodle's GIFT format, after its grammar (https://docs.moodle.org/en/GIFT_format),
for the tests: a question that does not parse fails the test with the reason.

question   := [comment-lines] ["::" title "::"] ["[" format "]"] stem "{" answer-block "}"
answers    := ("=" text | "~" text)* ["####" feedback]   (MCQ: one "=" and at least one "~")
            | "####" feedback | ""                         (essay)
text       := (escaped-char | any char but ~ = # { } :)*  where escaped-char := "\\" one of ~=#{}:\\
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SPECIAL = "~=#{}:\\"


class GiftError(ValueError):
    pass


@dataclass
class GiftQuestion:
    title: str
    stem: str
    kind: str  # "mcq" or "essay"
    right: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    feedback: str = ""


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _split_unescaped(text: str, stop: str) -> tuple[str, str]:
    """``text`` up to the first unescaped ``stop`` character, and the rest after it."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            if i + 1 >= len(text) or text[i + 1] not in _SPECIAL:
                raise GiftError(f"bad escape at {text[i : i + 10]!r}")
            i += 2
            continue
        if text[i] == stop:
            return text[:i], text[i + 1 :]
        if text[i] in "{}=~#" and stop != "}":
            raise GiftError(f"unescaped {text[i]!r} in {text[:60]!r}")
        i += 1
    raise GiftError(f"missing {stop!r} in {text[:60]!r}")


def _check_plain(text: str) -> None:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            if i + 1 >= len(text) or text[i + 1] not in _SPECIAL:
                raise GiftError(f"bad escape in {text!r}")
            i += 2
            continue
        if text[i] in "~=#{}:":
            raise GiftError(f"unescaped {text[i]!r} in {text!r}")
        i += 1


def parse_question(block: str) -> GiftQuestion:
    lines = [line for line in block.splitlines() if not line.lstrip().startswith("//")]
    text = " ".join(lines).strip()
    title = ""
    if text.startswith("::"):
        raw_title, text = _split_unescaped(text[2:], ":")
        if not text.startswith(":"):
            raise GiftError("title must end with '::'")
        text = text[1:]
        _check_plain(raw_title)
        title = _unescape(raw_title)
    text = text.lstrip()
    if text.startswith("["):
        end = text.index("]")
        if text[1:end] not in {"markdown", "html", "plain", "moodle"}:
            raise GiftError(f"unknown format {text[1:end]!r}")
        text = text[end + 1 :]
    stem, rest = _split_unescaped(text, "{")
    _check_plain(stem)
    body, after = _split_unescaped(rest, "}")
    if after.strip():
        raise GiftError(f"text after the answers: {after!r}")
    body = body.strip()
    feedback = ""
    if "####" in body:
        body, feedback = body.split("####", 1)
        _check_plain(feedback)
        body = body.strip()
    question = GiftQuestion(title=title, stem=_unescape(stem).strip(), kind="essay", feedback=_unescape(feedback))
    if not body:
        return question
    parts = re.split(r"(?<!\\)([=~])", body)
    if parts[0].strip():
        raise GiftError(f"answer text before the first = or ~: {parts[0]!r}")
    for mark, answer in zip(parts[1::2], parts[2::2], strict=True):
        _check_plain(answer.strip())
        (question.right if mark == "=" else question.wrong).append(_unescape(answer).strip())
    if len(question.right) != 1 or not question.wrong:
        raise GiftError(f"an MCQ needs one right and some wrong answers: {body!r}")
    question.kind = "mcq"
    return question


def parse_gift(text: str) -> list[GiftQuestion]:
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    return [parse_question(b) for b in blocks]
