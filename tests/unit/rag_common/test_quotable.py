"""The quotable units of a passage read as plain sentences, whatever markup or glyphs the source had."""

from __future__ import annotations

import pytest

from rag_common.text.quotable import candidate_sentences, unique_candidates
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


def test_code_flattened_into_a_line_is_code_and_never_a_sentence() -> None:
    text = (
        "Example eval test cases : 200 articles with reference summaries. from rouge import Rouge import anthropic\n\n"
        'Shorthand Expanded messages = [ { "role" : "user" , "content" : "Hello there." } , { "role" : '
        '"assistant" , "content" : "Hi, I\'m Claude. How can I help?" } ]\n\n'
        "client = anthropic . Anthropic ( ) message = client . messages . create ( model = model )\n\n"
        "Call the create method of the client to send messages (a list of roles and contents)."
    )
    passage = Passage(n=1, source="doc.md", text=text)
    assert units(text) == [
        "Example eval test cases : 200 articles with reference summaries.",
        "Call the create method of the client to send messages (a list of roles and contents).",
    ]
    code = [c.text for c in candidate_sentences([passage], code=True) if c.kind == "code"]
    assert "from rouge import Rouge import anthropic" in code
    assert "client = anthropic . Anthropic ( ) message = client . messages . create ( model = model )" in code


def test_a_unit_with_a_heading_glued_in_front_gives_way_to_the_clean_one() -> None:
    sentence = "The Messages API expects user and assistant roles in alternating turns."
    text = f"Role names {sentence}\nRole names{sentence}\n\nRole names\n{sentence}\n\nNote that {sentence}"
    kept = [c.text for c in unique_candidates(candidate_sentences([Passage(n=1, source="doc.md", text=text)]))]
    assert kept == [sentence, f"Note that {sentence}"]  # "Note that" is a sentence's own opening, not a heading


def test_a_tag_that_is_not_html_is_what_the_text_is_about_and_is_kept() -> None:
    text = (
        "Combine XML tags with multishot prompting (<examples>) or chain of thought (<thinking>, <answer>). "
        "Wrap the contract in <contract> tags.\n\n"
        '<Tip>Billing is monthly for the <b>Pro</b> plan in <span class="region">every region</span>.</Tip>'
    )
    assert units(text) == [
        "Combine XML tags with multishot prompting (<examples>) or chain of thought (<thinking>, <answer>).",
        "Wrap the contract in <contract> tags.",
        "Billing is monthly for the Pro plan in every region.",
    ]


def test_a_key_value_line_giving_an_address_or_a_number_is_a_unit_not_a_heading() -> None:
    text = (
        "Get basic JetStream information: [https://demo.nats.io:8222/jsz](https://demo.nats.io:8222/jsz)\n\n"
        "Default port: 4222\n\n"
        "Installation Guide\n\n"
        "Run the installer as an administrator."
    )
    assert units(text) == [
        "Get basic JetStream information: https://demo.nats.io:8222/jsz",
        "Default port: 4222",
        "Run the installer as an administrator.",
    ]
