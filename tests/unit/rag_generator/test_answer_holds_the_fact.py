"""Extractive answers that hold the asked fact, as a reader reads them: the right unit whole, in its
own Markdown, the asked value first, both sides of a comparison, and a refusal only when the
documents lack what was asked. The passages are written as the NATS documentation writes them."""

from __future__ import annotations

import pytest

from rag_common.text.conflicts import find_conflicts
from rag_common.wire.messages import Passage
from rag_generator.extractive import extractive_reply

pytestmark = pytest.mark.unit

BCRYPT = Passage(
    n=1,
    source="nats_cli/README.md",
    section="Generating bcrypted passwords",
    text=(
        "The server supports hashing of passwords and authentication tokens using `bcrypt`. To take advantage "
        "of this, simply replace the plaintext password in the configuration with its `bcrypt` hash.\n\n"
        "The `nats` utility has a command for creating `bcrypt` hashes.\n\n"
        "```\nnats server passwd\n? Enter password [? for help] ******\n```\n\n"
        "To use the password on the server, add the hash into the server configuration file's authorization section."
    ),
)
LEAFNODES = Passage(
    n=1,
    source="leafnodes/leafnode_conf.md",
    section="`leafnodes` Configuration Block",
    kind="table",
    text=(
        "A nats-server accepts leafnode connections when a leafnodes block is configured.\n\n"
        "Property: host; Description: Interface where the server will listen for incoming leafnode connections.\n"
        "Property: port; Description: Port where the server will listen for incoming leafnode connections "
        "(default is 7422).\n"
        "Property: authorization; Description: Authorization block."
    ),
)
STREAM_PARTS = Passage(
    n=1,
    source="streams.md",
    section="Streams",
    text=(
        "A subject-based stream in JetStream consists of three parts:\n\n"
        "- the subjects it listens on;\n- the storage it keeps messages in;\n- the limits that discard old messages."
    ),
)
CONSUMERS = Passage(
    n=1,
    source="consumers.md",
    section="Consumers",
    text=(
        "Consumers can be push-based or pull-based. Push consumers have messages delivered to a subject that the "
        "client subscribes to. Pull consumers let the client ask the server for messages in batches, at its own "
        "pace. Durable consumers keep their state across restarts."
    ),
)


def test_a_sentence_that_leads_into_a_command_brings_the_command_fenced() -> None:
    reply = extractive_reply("how do I get a bcrypt hash of a password to paste into the server config?", [BCRYPT])
    assert "```\nnats server passwd\n" in reply.text  # the command, as a code block, not prose


def test_the_asked_value_comes_as_its_table_row_under_the_header() -> None:
    reply = extractive_reply(
        "Which port does nats-server listen on for incoming leafnode connections if I don't set one?", [LEAFNODES]
    )
    assert reply.answered  # "if I don't set one" is the table's "default"
    table = reply.text[reply.text.index("| Property") :]
    assert table.startswith("| Property | Description |\n|---|---|\n| port |")  # the row with the port first
    assert "7422" in table.splitlines()[2]
    assert "field:" not in reply.text.lower()  # never flattened into "field: description ..." prose


def test_an_answer_never_stops_on_a_lead_in_without_its_list() -> None:
    reply = extractive_reply("What does a subject-based stream consist of?", [STREAM_PARTS])
    assert not reply.text.rstrip().endswith(":")
    assert "- the subjects it listens on" in reply.text


def test_a_comparison_quotes_each_side() -> None:
    reply = extractive_reply("What's the difference between pull consumers and push consumers?", [CONSUMERS])
    lines = reply.text.splitlines()
    assert lines[0].startswith("- **pull consumers**: Pull consumers let the client ask")
    assert lines[1].startswith("- **push consumers**: Push consumers have messages delivered")


def test_a_number_no_passage_gives_near_the_question_is_refused() -> None:
    reply = extractive_reply("How many subjects can a stream listen on at most?", [STREAM_PARTS])
    assert not reply.answered
    assert reply.reason == "no passage near the question gives the number it asks for"


PRICING = Passage(
    n=1,
    source="pricing.md",
    section="Plans",
    text=(
        "Plan: Free; Price per user per month: $0\nPlan: Pro; Price per user per month: $12\n\n"
        "The Pro plan is $12 per user per month. The Business plan costs $24 per user per month."
    ),
)


def test_a_price_is_stated_once_and_another_plan_is_not_more_of_the_answer() -> None:
    reply = extractive_reply("How much does the Pro plan cost per user per month?", [PRICING])
    assert reply.text.count("$12") == 1
    assert "Business" not in reply.text


EVICTING = Passage(
    n=1,
    source="jetstream_clustering/administration.md",
    section="Evicting a peer",
    text=(
        "There might be a case though where you know a node will never return, and you want to signal to "
        "JetStream that the node will not return. After the node is removed the cluster will notice that the "
        "replica count of a stream is not honored anymore.\n\n"
        "```shell\nnats server cluster peer-remove n4-c1\n```\n\n"
        "Peer-removing nodes from the cluster is a destructive operation."
    ),
)


def test_a_how_to_answer_shows_the_command_its_passage_gives_after_the_explanation() -> None:
    reply = extractive_reply(
        "a node in my JetStream cluster is gone for good - how do I tell the cluster to drop it?", [EVICTING]
    )
    assert "`nats server cluster peer-remove n4-c1` [1]" in reply.text  # one line: a code span
    assert reply.text.index("never return") < reply.text.index("peer-remove n4-c1")  # explained, then shown


def test_two_sources_disagreeing_on_a_price_say_each_price_once() -> None:
    brochure = Passage(n=1, source="brochure.pdf", text="The Pro plan costs $15 per user per month.")
    pricing = Passage(n=2, source="pricing.md", text="The Pro plan is $12 per user per month.")
    forum = Passage(n=3, source="forum.md", text="A user asked whether the price of the Pro plan changed this year.")
    passages = [brochure, pricing, forum]
    reply = extractive_reply(
        "How much does the Pro plan cost per user per month?", passages, conflicts=find_conflicts(passages)
    )
    assert reply.text.count("$15") == 1
    assert reply.text.count("$12") == 1
    assert "disagree" in reply.text
    assert "asked whether" not in reply.text  # a question reported in a forum answers nothing


SUPPORT = [
    Passage(
        n=1,
        source="support.md",
        section="Contact",
        text="Email support@orbitly.example from the address you log in with. Enterprise customers have a phone line.",
    ),
    Passage(
        n=2,
        source="support-hours.md",
        section="Support hours",
        text="Customer support is available Monday to Friday, 07:00 to 19:00 UTC. We are closed on 1 January.",
    ),
]
CRITICAL_PATH = Passage(
    n=1,
    source="timeline.md",
    section="Critical path",
    text="Critical path is available on the Business and Enterprise plans only.",
)


def test_support_hours_are_answered_with_the_hours() -> None:
    reply = extractive_reply("What are the support hours for email support?", SUPPORT)
    assert reply.text.startswith("Customer support is available Monday to Friday, 07:00 to 19:00 UTC [2].")


def test_a_feature_named_like_a_path_is_not_asked_as_one() -> None:
    reply = extractive_reply("Which plans include the critical path feature?", [CRITICAL_PATH])
    assert reply.answered
    assert "Business and Enterprise" in reply.text


STORAGE = Passage(
    n=1,
    source="jetstream/jetstream.md",
    section="Persistent storage",
    text=(
        "JetStream does not implement standby and fault tolerance through a shared file system. If a standby server "
        "shares a storage directory with an active server, you must make sure only one is active at any time. "
        "We do not recommend such a setup.\n\n"
        'Here\'s an example minimal file that will store data in a local "nats" directory with some limits.\n\n'
        "```\njetstream {\n  store_dir: nats\n  max_file_store: 10G\n}\n```"
    ),
)
KV_HISTORY = Passage(
    n=1,
    source="kv.md",
    section="Key/Value Store",
    text=(
        "A KV bucket keeps the history of each key when asked to. The maximum history size per key is 64, if you "
        "need more use a stream directly."
    ),
)


def test_a_sentence_presenting_an_example_is_not_quoted_without_the_example() -> None:
    reply = extractive_reply("Can a standby server share the active server's JetStream directory?", [STORAGE])
    assert "We do not recommend such a setup" in reply.text
    assert "Here's an example" not in reply.text


def test_what_is_the_most_asks_for_the_limit_and_the_answer_holds_it() -> None:
    reply = extractive_reply("What's the most history per key that a KV bucket can keep?", [KV_HISTORY])
    assert "The maximum history size per key is 64" in reply.text
