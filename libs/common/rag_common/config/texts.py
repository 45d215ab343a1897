"""What the system says in its own words, per collection: its profile (name, refusal, greetings, ...).

A support bot wants "I don't have information on that; contact support@example.com", an internal
wiki "Nothing in the handbook covers that". The texts live in one JSON file named by
``RAG_COLLECTIONS_FILE``, read by the router (greetings) and the generator (refusals)::

    {"support": {"assistant_name": "Orbitly Help",
                 "refusal": "I don't have information on that; contact support@example.com.",
                 "greeting": "Hi! Ask me about Orbitly's plans, billing and setup.",
                 "blocked": "I can only answer questions about Orbitly.",
                 "support_contact": "support@example.com",
                 "terminology": {"workspace": ["organisation", "org"]}}}

Collections not in the file, and texts a collection leaves out, use the defaults below.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_REFUSAL = "I don't have that in the documents."
DEFAULT_GREETING = "Hello! Ask me anything about your documents and I will answer with citations."
DEFAULT_THANKS = "You're welcome! Anything else I can look up in your documents?"
DEFAULT_ASSISTANT_NAME = "Document assistant"
DEFAULT_BLOCKED = "I can't help with that request; ask me about the documents instead."
MAX_TERMS = 200
MAX_TERM_CHARS = 80


class CollectionTexts(BaseModel):
    """The profile of one collection: the assistant's name, its canned texts (each at most a short
    paragraph), a support contact, and a terminology catalogue (preferred term -> rival terms that
    an answer should not use).
    """  # noqa: D205 (the text is the model's published schema description)

    model_config = ConfigDict(extra="forbid")

    assistant_name: str = Field(DEFAULT_ASSISTANT_NAME, min_length=1, max_length=80)
    refusal: str = Field(DEFAULT_REFUSAL, min_length=1, max_length=500)
    greeting: str = Field(DEFAULT_GREETING, min_length=1, max_length=500)
    thanks: str = Field(DEFAULT_THANKS, min_length=1, max_length=500)
    blocked: str = Field(DEFAULT_BLOCKED, min_length=1, max_length=500)
    support_contact: str | None = Field(None, min_length=1, max_length=200)
    terminology: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("terminology")
    @classmethod
    def _terminology(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        """Terms are short phrases; a rival term is never the preferred one (it would flag every use)."""
        if len(value) > MAX_TERMS:
            raise ValueError(f"at most {MAX_TERMS} preferred terms")
        for preferred, rivals in value.items():
            for term in (preferred, *rivals):
                if not term.strip() or len(term) > MAX_TERM_CHARS or any(c in term for c in "\r\n\t"):
                    raise ValueError(f"term {term!r}: 1-{MAX_TERM_CHARS} characters on one line")
            if not rivals:
                raise ValueError(f"preferred term {preferred!r}: list at least one rival term")
            if any(r.strip().casefold() == preferred.strip().casefold() for r in rivals):
                raise ValueError(f"preferred term {preferred!r} is listed as its own rival")
        return {p.strip(): [r.strip() for r in rivals] for p, rivals in value.items()}


class CollectionTextsError(ValueError):
    """The collections file cannot be used; the message names the file and the problem."""


@cache
def _load(path: Path) -> dict[str, CollectionTexts]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CollectionTextsError(f"RAG_COLLECTIONS_FILE={path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise CollectionTextsError(f"RAG_COLLECTIONS_FILE={path}: expected an object of collections")
    try:
        return {name: CollectionTexts.model_validate(value) for name, value in raw.items()}
    except ValidationError as exc:
        raise CollectionTextsError(f"RAG_COLLECTIONS_FILE={path}: {exc}") from exc


def collection_texts(path: Path | None, collection: str) -> CollectionTexts:
    """The texts for ``collection``: from the file at ``path`` when it names it, else the defaults."""
    if path is None:
        return CollectionTexts()
    return _load(path.resolve()).get(collection) or CollectionTexts()


def with_contact(text: str, profile: CollectionTexts) -> str:
    """``text`` with the profile's support contact appended (" Contact: <contact>.").

    So every refusal and blocked reply says where to turn; unchanged when no contact is set or the
    text already names it (a deployer who wrote the contact into the text is not repeated).
    """
    contact = profile.support_contact
    if not contact or contact.casefold() in text.casefold():
        return text
    text = text.rstrip()
    separator = " " if text.endswith((".", "!", "?", ":", ";")) else ". "
    return f"{text}{separator}Contact: {contact.rstrip('.')}."


def check_collections_file(path: Path | None) -> None:
    """Fail at start-up, not at the first question, when the file is unreadable or malformed."""
    if path is not None:
        _load(path.resolve())


def blocked_reply(texts: CollectionTexts) -> str:
    """The reply to a question refused as an attack.

    The collection's blocked text, and where to get help when the profile names a support contact
    (``with_contact``, as every refusal).
    """
    return with_contact(texts.blocked, texts)
