r"""The one rule for each name a client chooses: collections, document ids, file names, filters.

Every check matches the whole string (``fullmatch``; a ``$`` would also accept a trailing
newline and let ``"docs\n"`` become a look-alike of ``docs``). The gateway rejects a bad name
before anything is stored or queued; services use the same rules to refuse what slips past.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Annotated, Any

from pydantic import AfterValidator

COLLECTION_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
COLLECTION_RULE = "1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit"

DOCUMENT_ID_RE = re.compile(r"[0-9a-f]{32}")
DOCUMENT_ID_RULE = "32 lowercase hexadecimal characters"

MAX_SOURCE_CHARS = 512
# Unicode categories a file name may not contain: controls (NUL, newline, ESC...), invisible
# format characters (bidi overrides such as U+202E, zero-width joiners, BOM), line/paragraph
# separators and lone surrogates. Each could make a citation's source read as another file.
_FORBIDDEN_NAME_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}

FILTER_KEY_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
MAX_FILTER_KEYS = 16
MAX_FILTER_VALUES = 64
MAX_FILTER_STRING_CHARS = 512
MAX_FILTERS_JSON_BYTES = 8192


def valid_collection(name: str) -> bool:
    """Collection names are lowercase slugs: they become part of a Qdrant collection name."""
    return COLLECTION_RE.fullmatch(name) is not None


def check_collection(name: str) -> str:
    """The name if valid, else ``ValueError`` with a message meant for the client."""
    if not valid_collection(name):
        raise ValueError(f"collection {name!r} must be {COLLECTION_RULE}")
    return name


Collection = Annotated[str, AfterValidator(check_collection)]


def valid_document_id(document_id: str) -> bool:
    """Document ids are the gateway's uuid5 hex: nothing else can name a stored document."""
    return DOCUMENT_ID_RE.fullmatch(document_id) is not None


def check_source_name(name: str) -> str:
    """A file name fit to be shown as a citation's ``source``; ``ValueError`` says why not.

    Names with control or invisible formatting characters are rejected, not cleaned: a cleaned
    name would silently differ from what the client sent, and a rejected one tells them.
    """
    for ch in name:
        if unicodedata.category(ch) in _FORBIDDEN_NAME_CATEGORIES:
            what = unicodedata.name(ch, "control character")
            raise ValueError(f"the file name contains U+{ord(ch):04X} ({what}); rename the file")
    if len(name) > MAX_SOURCE_CHARS:
        raise ValueError(f"the file name is longer than {MAX_SOURCE_CHARS} characters")
    return name


def check_filters(filters: dict[str, Any]) -> dict[str, Any]:
    """Payload filters the vector store can apply, or ``ValueError`` naming the bad one.

    A value is a string, an integer or a boolean (equality), or a non-empty list of strings or
    of integers (any of). Keys are short names; nulls, floats (and NaN), objects and mixed
    lists are refused here so a bad filter is a 422 at the gateway, never a failed query stage.
    """
    if len(filters) > MAX_FILTER_KEYS:
        raise ValueError(f"at most {MAX_FILTER_KEYS} filters are allowed, got {len(filters)}")
    for key, value in filters.items():
        if not isinstance(key, str) or FILTER_KEY_RE.fullmatch(key) is None:
            raise ValueError(f"filter key {key!r} must be 1-64 letters, digits, '-' or '_'")
        problem = _filter_value_problem(value)
        if problem:
            raise ValueError(f"filter {key!r}: {problem}")
    size = len(json.dumps(filters).encode("utf-8"))
    if size > MAX_FILTERS_JSON_BYTES:
        raise ValueError(f"filters are {size} bytes as JSON, over the {MAX_FILTERS_JSON_BYTES}-byte limit")
    return filters


def _filter_value_problem(value: Any) -> str | None:
    if isinstance(value, list):
        if not value:
            return "a list must not be empty"
        if len(value) > MAX_FILTER_VALUES:
            return f"a list may hold at most {MAX_FILTER_VALUES} values"
        kinds = {_scalar_kind(item) for item in value}
        if kinds == {"string"}:
            return _string_problem(value)
        if kinds == {"integer"}:
            return _integer_problem(value)
        return "a list must hold only strings or only integers"
    kind = _scalar_kind(value)
    if kind == "string":
        return _string_problem([value])
    if kind == "integer":
        return _integer_problem([value])
    if kind == "boolean":
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN and infinity are not filter values"
    return f"{kind} is not a filter value; use a string, an integer, a boolean or a list of strings or integers"


def _scalar_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a nested list"
    return type(value).__name__


def _string_problem(values: list[str]) -> str | None:
    if any(len(v) > MAX_FILTER_STRING_CHARS for v in values):
        return f"a string value may be at most {MAX_FILTER_STRING_CHARS} characters"
    return None


def _integer_problem(values: list[int]) -> str | None:
    if any(not -(2**63) <= v < 2**63 for v in values):
        return "an integer value must fit in 64 bits"
    return None


Filters = Annotated[dict[str, Any], AfterValidator(check_filters)]
