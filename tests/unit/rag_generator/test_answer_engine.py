"""The extractive answer engine, as a reader sees its answers: the fact asked for, not a neighbour of it."""

from __future__ import annotations

import pytest

from rag_common.text.conflicts import find_conflicts
from rag_common.wire.messages import Passage
from rag_generator.asking import AnswerType, analyse
from rag_generator.extractive import extractive_reply

pytestmark = pytest.mark.unit

CLUB = Passage(
    n=1,
    source="club.md",
    section="Lunar Garden Club",
    text=(
        "The Lunar Garden Club is a community of amateur gardeners who plant by the phases of the moon. "
        "Members meet on the first Sunday of each month.\n\n## Membership\n\n"
        "Membership costs €35 per year and includes a packet of seeds."
    ),
)
SECURITY = Passage(
    n=1,
    source="security.md",
    section="Backups and audit logs",
    text=(
        "The audit log records sign-ins, permission changes, exports and deletions. It is kept for **90 days** "
        "on the Business plan and for **1 year** on the Enterprise plan.\n\n"
        "Backups are taken every 24 hours and kept for 30 days, in the same region as the workspace."
    ),
)
TROUBLESHOOTING = Passage(
    n=1,
    source="troubleshooting.md",
    section="Integrations",
    text=(
        "**Google Calendar.** If tasks stop appearing in your calendar and you see the error **SYNC-409**, the "
        "connection to Google Calendar has expired. Go to **Settings > Integrations > Google Calendar**, click "
        "**Disconnect**, then **Connect** again."
    ),
)
AGENT = Passage(
    n=1,
    source="cli-and-agent.md",
    section="Sync agent settings",
    text=(
        "## Sync agent settings\n\nThe sync agent is configured in `agent.yaml`. These are the defaults:\n\n"
        "```\nlisten_port: 8443\nsync_interval_minutes: 15\nlog_level: info\n```\n"
    ),
)
PRICES = Passage(
    n=1,
    source="pricing.md",
    section="Plans",
    kind="table",
    text=(
        "Plan: Free; Price per user per month: $0; Storage: 2 GB\n"
        "Plan: Pro; Price per user per month: $12; Storage: 100 GB\n"
        "Plan: Business; Price per user per month: $24; Storage: 1 TB"
    ),
)
BROCHURE = Passage(n=2, source="brochure.pdf", page=2, text="The Pro plan costs $15 per user per month.")
ABOUT = Passage(
    n=3,
    source="getting-started.md",
    section="Orbitly",
    text="Orbitly is a project-management app made by Orbitly Labs. Orbitly runs in the browser and on iOS.",
)


def reply(question: str, *passages: Passage) -> str:
    answer = extractive_reply(question, list(passages), conflicts=find_conflicts(list(passages)))
    assert answer.answered, answer.reason
    return answer.text


def test_a_price_question_gets_the_sentence_with_the_price() -> None:
    answer = reply("How much does membership of the Lunar Garden Club cost?", CLUB)
    assert answer.startswith("Membership costs €35 per year")
    assert "phases of the moon" not in answer


def test_a_sentence_opening_with_it_is_never_quoted_without_what_it_refers_to() -> None:
    answer = reply("How long are backups kept?", SECURITY)
    assert answer.startswith("Backups are taken every 24 hours and kept for 30 days")
    assert not any(part.startswith("It is kept") for part in answer.split(". "))


def test_what_should_i_do_gets_the_fix_not_only_the_cause() -> None:
    answer = reply("I get error SYNC-409, what should I do?", TROUBLESHOOTING)
    assert "Go to Settings > Integrations > Google Calendar, click Disconnect, then Connect again [1]." in answer


def test_a_disagreement_opens_the_answer() -> None:
    pricing = Passage(n=1, source="pricing.md", section="Plans", text="The Pro plan costs $12 per user per month.")
    answer = reply("How much does the Pro plan cost?", pricing, BROCHURE)
    assert answer.startswith("The sources disagree on Pro: pricing.md says $12 [1], while brochure.pdf says $15 [2].")


def test_no_boilerplate_preamble_and_a_table_row_keeps_its_header() -> None:
    answer = reply("How much storage does the Business plan include?", PRICES)
    assert answer == "| Plan | Storage |\n|---|---|\n| Business | 1 TB [1] |"


def test_a_configuration_value_is_quoted_verbatim_in_a_code_span() -> None:
    answer = reply("What port does the sync agent listen on by default?", AGENT)
    assert "`listen_port: 8443` [1]" in answer


def test_how_do_i_gets_every_step_in_order() -> None:
    steps = Passage(
        n=1,
        source="admin-guide.md",
        section="Transferring ownership",
        text=(
            "## Transferring ownership\n\n1. Open Settings > Members.\n2. Find the new Owner in the list of members.\n"
            "3. Click Transfer ownership and confirm with your password.\n\nOnly the current Owner can do this."
        ),
    )
    answer = reply("How do I transfer ownership of the workspace?", steps)
    lines = answer.splitlines()
    assert lines[0].startswith("- Open Settings > Members")
    assert lines[2].startswith("- Click Transfer ownership")


def test_a_question_the_passages_do_not_answer_is_not_answered() -> None:
    ceo = extractive_reply("Who is the CEO of Orbitly?", [ABOUT, SECURITY, TROUBLESHOOTING])
    teams = extractive_reply("Does Orbitly integrate with Microsoft Teams?", [ABOUT, TROUBLESHOOTING, SECURITY])
    assert not ceo.answered
    assert "CEO" in ceo.reason.upper()
    assert not teams.answered
    assert "Teams" in teams.reason


def test_a_question_naming_a_document_by_its_file_name_is_answered_from_that_document() -> None:
    plan = Passage(
        n=1,
        source="Northwind_Standard_Benefits_Details.pdf",
        section="Allowed Amount",
        text="An Allowed Amount is the maximum amount that the plan will pay for a covered service.",
    )
    asked = extractive_reply('What does "Allowed Amount" mean in Northwind_Standard_Benefits_Details.pdf?', [plan])
    assert asked.answered, asked.reason
    assert asked.text.startswith("An Allowed Amount is the maximum amount that the plan will pay")
    other = extractive_reply("What does Northwind_Plus_Benefits_Details.pdf say about the allowed amount?", [plan])
    assert not other.answered
    assert "Northwind_Plus_Benefits_Details.pdf" in other.reason


def test_citations_follow_the_reading_order_of_the_document() -> None:
    passage = Passage(
        n=1,
        source="billing.md",
        section="Invoices",
        text=(
            "Invoices are emailed to the billing contact. "
            "Invoices are emailed and can be downloaded from Billing as PDF."
        ),
    )
    answer = reply("Are invoices emailed to the billing contact, and can invoices be downloaded as PDF?", passage)
    assert answer == (
        "Invoices are emailed to the billing contact [1]. "
        "Invoices are emailed and can be downloaded from Billing as PDF [1]."
    )


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How much does the Pro plan cost?", AnswerType.QUANTITY),
        ("When was version 4.3 released?", AnswerType.DATE),
        ("Who is the CEO of Orbitly?", AnswerType.ENTITY),
        ("What port does the sync agent listen on?", AnswerType.VALUE),
        ("How do I reset my password?", AnswerType.STEPS),
        ("Why was my card declined?", AnswerType.REASON),
        ("Can I export my tasks to CSV?", AnswerType.YES_NO),
        ("What are the supported webhook events?", AnswerType.LIST),
        ("What is the difference between Pro and Business?", AnswerType.COMPARISON),
        ("What is a webhook?", AnswerType.DEFINITION),
        # a named operation, not a comparison; a limit asked for as "the most"
        ("How do I do a compare-and-set write to a KV key from the CLI?", AnswerType.STEPS),
        ("What's the most historical values per key that a bucket can retain?", AnswerType.QUANTITY),
        ("What is the most common error?", AnswerType.DEFINITION),
    ],
)
def test_the_answer_type_of_a_question(question: str, expected: AnswerType) -> None:
    assert analyse(question).answer_type is expected


def test_who_does_something_is_answered_by_the_role_that_does_it() -> None:
    rows = Passage(
        n=1,
        source="field-station.docx",
        section="Timetable",
        kind="table",
        text="Day: Tuesday; Activity: Ice core drilling; Instructor: Tomasz Wielgosz",
    )
    keepers = Passage(n=2, source="otters.md", section="Staff", text="The otter keeper at Brightwater is Ingrid Vale.")
    assert "Tomasz Wielgosz" in reply("Who teaches ice core drilling at the field station?", rows)
    assert "Ingrid Vale" in reply("Who keeps the otters at Brightwater?", keepers)


def test_what_a_plan_includes_is_answered_with_its_list() -> None:
    assert analyse("What does the Business plan include?").answer_type is AnswerType.LIST
