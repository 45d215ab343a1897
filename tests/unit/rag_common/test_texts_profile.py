"""The collection profile's support contact in refusals and blocked replies."""

from __future__ import annotations

import pytest

from rag_common.config.texts import DEFAULT_BLOCKED, DEFAULT_REFUSAL, CollectionTexts, with_contact

pytestmark = pytest.mark.unit


def test_the_contact_is_appended_to_a_refusal() -> None:
    profile = CollectionTexts(support_contact="support@orbitly.example")
    assert with_contact(DEFAULT_REFUSAL, profile) == f"{DEFAULT_REFUSAL} Contact: support@orbitly.example."
    assert with_contact(DEFAULT_BLOCKED, profile).endswith(" Contact: support@orbitly.example.")


def test_a_text_without_a_full_stop_gets_one_before_the_contact() -> None:
    profile = CollectionTexts(support_contact="+1 555 0100")
    assert with_contact("Not in the handbook", profile) == "Not in the handbook. Contact: +1 555 0100."


def test_no_contact_or_a_text_that_names_it_is_unchanged() -> None:
    assert with_contact(DEFAULT_REFUSAL, CollectionTexts()) == DEFAULT_REFUSAL
    named = "Ask Support@Orbitly.example for that."
    assert with_contact(named, CollectionTexts(support_contact="support@orbitly.example")) == named
