"""The injection rules' patterns, read from ``injection_rules.toml`` (pure, no I/O after the first read).

The patterns are data; this is the matcher: it joins each pattern's pieces, puts the shared
vocabulary in for ``${name}``, compiles it once with its flags, and tells which rule of a list
matches a text first. What the rules mean, and how a document or a question is cut up and judged,
lives in ``injection_documents`` and ``injection_questions``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

RULES_FILE = Path(__file__).with_name("injection_rules.toml")
_REFERENCE = re.compile(r"\$\{(\w+)\}")


@dataclass(frozen=True, slots=True)
class Rule:
    """A pattern and the kind of planted text or attack it names."""

    kind: str
    pattern: re.Pattern[str]


@cache
def _data() -> dict[str, Any]:
    with RULES_FILE.open("rb") as handle:
        return tomllib.load(handle)


def compile_entry(entry: Mapping[str, Any], vocabulary: Mapping[str, Sequence[str]]) -> re.Pattern[str]:
    """One entry's pattern: its pieces joined, ``${name}`` replaced by the vocabulary's, flags set."""

    def piece(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in vocabulary:
            raise KeyError(f"{RULES_FILE.name}: no vocabulary named {name!r}")
        return "".join(vocabulary[name])

    source = _REFERENCE.sub(piece, "".join(entry["pattern"]))
    flags = 0 if entry.get("case_sensitive") else re.IGNORECASE
    flags |= re.MULTILINE if entry.get("multiline") else 0
    flags |= re.DOTALL if entry.get("dotall") else 0
    return re.compile(source, flags)


@cache
def rules(section: str) -> tuple[Rule, ...]:
    """The rule list ``section`` (``sentence``, ``line``, ``question``), in the file's order."""
    vocabulary = _data()["vocabulary"]
    return tuple(Rule(entry["kind"], compile_entry(entry, vocabulary)) for entry in _data()[section])


@cache
def named(name: str) -> re.Pattern[str]:
    """A single pattern the algorithm uses by name (``[named]``)."""
    return compile_entry(_data()["named"][name], _data()["vocabulary"])


def text_data(name: str) -> Any:
    """A value of ``[text]``: word lists and character maps."""
    return _data()["text"][name]


def first_kind(rule_list: Sequence[Rule], text: str) -> str | None:
    """The kind of the first rule that matches ``text`` anywhere, or None."""
    for rule in rule_list:
        if rule.pattern.search(text):
            return rule.kind
    return None


def hits(rule_list: Sequence[Rule], text: str) -> Iterator[tuple[str, str]]:
    """(kind, matched text) of every rule that matches ``text``, in order."""
    for rule in rule_list:
        match = rule.pattern.search(text)
        if match is not None:
            yield rule.kind, match.group(0)
