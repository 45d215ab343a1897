"""What a teacher reads in a rule-written question: a real question that names no file or section,
options of the key's kind, a Bloom level that is the question's form, and a model answer a marker
can use (the defining sentence, the reason, a marking scheme of cited points whose marks add up)."""

from __future__ import annotations

import pytest

from rag_common.text.term_shape import shape_mismatch
from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import BLOOM_FORMS, QuestionSpec
from rag_evaluator.question_checks import validate
from rag_generator.forms_text import other_subjects
from rag_generator.linguistics import parse, question_for, terms
from rag_generator.questions import term_pool, write_question

pytestmark = pytest.mark.unit

SOURCE = "course/operating-nats.docx"
LDM = Passage(
    n=1,
    source=SOURCE,
    section="Chapter 3: Lame duck mode > Server",
    chunk_index=4,
    text=(
        "Lame duck mode is a graceful way to shut a server down and slowly evict its clients. "
        "The lame_duck_duration setting controls how long the server takes to evict all clients. "
        "The server waits for a grace period of 10 seconds before it evicts the first client. "
        "Operators should shut servers down with lame duck mode because a sudden stop makes every client "
        "reconnect at once. "
        "Clients reconnect to another server of the cluster so that no message is lost."
    ),
)
AUTH = Passage(
    n=2,
    source=SOURCE,
    section="Chapter 2: Authentication > Tokens",
    chunk_index=9,
    text=(
        "Token authentication is a string that a client provides to connect to the server. "
        "To require a token from every client, set the authorization_token setting in the server configuration. "
        "Bcrypted tokens keep the clear-text token out of the configuration file."
    ),
)
OBJECTIVES = Passage(
    n=3,
    source=SOURCE,
    section="Chapter 3: Lame duck mode > Learning objectives",
    chunk_index=2,
    text="Shut a server down gracefully with lame duck mode.\nName the signals the server accepts.\n",
)
FOIL = Passage(
    n=4,
    source="monitoring.md",
    section="Monitoring",
    text=(
        "The varz endpoint reports 30 seconds of load. Clients are disconnected after 5 minutes of silence. "
        "The server keeps 90 seconds of statistics. A client gets 20 seconds to answer a ping. "
        "Open Settings to turn the monitor on. "
        "Once SSO is on, members sign in with Okta. "
        "The ping_interval setting decides how often the server pings its clients. "
        "The max_pending setting limits the bytes a client may have waiting. "
        "The write_deadline setting bounds how long a write may block. "
        "A slow consumer is a client that cannot keep up with the messages sent to it. "
        "A route is a connection between two servers of one cluster. "
        "A leaf node is a server that extends a cluster to another network. "
        "Servers gossip about routes because the cluster must form a full mesh without manual configuration. "
        "Leaf nodes authenticate with credentials so that accounts stay separate across networks. "
        "Gateways connect clusters to form a super-cluster so that interest spreads between regions."
    ),
)
PASSAGES = [LDM, AUTH, OBJECTIVES]
TOOLS = Passage(
    n=6,
    source=SOURCE,
    section="Chapter 4: Monitoring > Monitoring Tools",
    text=(
        "The Prometheus NATS Exporter scrapes the monitoring endpoints of every server. "
        "The NATS CLI reports the state of every stream on the command line. "
        "The Surveyor service collects statistics from a whole deployment of servers. "
        "The Grafana dashboard shows the statistics of the servers to operators."
    ),
)


def ask(kind: str, bloom: str, marks: float = 1.0, seed: int = 1, passages: list[Passage] = PASSAGES):  # type: ignore[no-untyped-def]
    pool = term_pool([FOIL, *passages])
    spec = QuestionSpec.model_validate({"index": 0, "kind": kind, "bloom": bloom, "marks": marks})
    question = write_question(spec, passages, pool, seed)
    assert question is not None
    return question


def distractors(question) -> list[str]:  # type: ignore[no-untyped-def]
    return [o for i, o in enumerate(question.options) if i != question.answer_index]


def test_a_value_is_asked_as_a_how_many_question_whose_options_share_its_unit() -> None:
    waits = Passage(n=1, source=SOURCE, section="Chapter 3 > Server", text=LDM.text.split(". ")[2] + ".")
    question = ask("mcq", "remember", passages=[waits])
    assert question.stem == "The server waits for a grace period of how many seconds before it evicts the first client?"
    assert question.answer == "10 seconds"
    assert sorted(distractors(question)) == ["20 seconds", "30 seconds", "90 seconds"]
    assert all(o.endswith("seconds") for o in question.options)
    assert shape_mismatch(question.options) is None
    assert validate(question, [waits], None, []).valid


def test_no_stem_names_a_file_or_section_and_the_source_is_shown_beside_it() -> None:
    for kind, bloom, marks in [("mcq", "remember", 1), ("short", "understand", 3), ("long", "evaluate", 6)]:
        question = ask(kind, bloom, marks)
        assert "operating-nats" not in question.stem
        assert "Chapter" not in question.stem
        assert question.stem.endswith(("?", "."))
        assert question.source.startswith(f"{SOURCE} > Chapter ")
        assert "___" not in question.stem


def test_learning_objectives_are_never_asked() -> None:
    pool = term_pool([FOIL, OBJECTIVES])
    for kind in ("mcq", "short", "long"):
        spec = QuestionSpec.model_validate({"index": 0, "kind": kind, "bloom": "remember", "marks": 3})
        assert write_question(spec, [OBJECTIVES], pool, 1) is None


def test_distractors_are_whole_terms_of_the_keys_kind() -> None:
    for seed in (1, 2, 3):
        question = ask("mcq", "remember", seed=seed)
        assert question.stem.endswith("?")
        assert shape_mismatch(question.options) is None, question.options
        for option in question.options:
            assert option not in {"Open Settings", "Once SSO", "SSO", "Settings"}
            assert option.split()[0].lower() not in {"open", "once", "turn", "shut", "name"}


def test_understand_asks_why_and_offers_reasons() -> None:
    question = ask("mcq", "understand", passages=[LDM])
    assert question.bloom == "understand"
    assert question.rule in {"why", "meaning"}
    if question.rule == "why":
        assert question.stem.startswith("Why ")
        assert all(o.split()[0] in {"because", "so", "to"} for o in question.options)
    else:
        assert question.stem == "Which description fits lame duck mode?"
    assert validate(question, [LDM], None, []).valid


def test_apply_is_a_scenario_where_one_setting_fits() -> None:
    question = ask("mcq", "apply", passages=[AUTH, LDM])
    assert question.stem == "You want to require a token from every client. Which setting fits?"
    assert question.answer == "authorization_token"
    assert set(distractors(question)) <= {"ping_interval", "max_pending", "write_deadline", "lame_duck_duration"}
    assert (question.bloom, question.rule) == ("apply", "scenario")


def test_analyze_compares_two_things_two_passages_describe_with_marks_that_add_up() -> None:
    question = ask("short", "analyze", marks=3)
    assert (question.bloom, question.rule) == ("analyze", "compare")
    assert question.stem.startswith("Compare ")
    assert len({c.section for c in question.citations}) == 2
    assert sum(p.marks for p in question.scheme) == 3


def test_evaluate_asks_whether_to_take_the_advice_for_the_reason_given() -> None:
    question = ask("short", "evaluate", marks=3, passages=[LDM])
    assert question.stem.startswith("Should operators shut servers down with lame duck mode?")
    assert question.bloom == "evaluate"
    assert "a sudden stop makes every client reconnect at once" in question.scheme[0].point


def test_define_gives_the_defining_sentence() -> None:
    question = ask("short", "remember", marks=3, passages=[LDM])
    assert question.stem == "Give the definition of lame duck mode."
    assert question.answer == LDM.text.split(". ")[0] + "."


def test_a_long_answer_is_a_marking_scheme_of_cited_points_whose_marks_add_up() -> None:
    question = ask("long", "understand", marks=6, passages=[LDM])
    assert len(question.scheme) >= 3
    assert sum(p.marks for p in question.scheme) == 6
    for point in question.scheme:
        assert point.citation.quote
        assert point.citation.quote in LDM.text
    assert validate(question, [LDM], None, []).valid


def test_a_level_the_material_cannot_support_is_written_lower_and_labelled_as_what_it_is() -> None:
    question = ask("mcq", "apply", passages=[LDM])  # no how-to sentence with its purpose here
    assert question.bloom != "apply"
    assert question.rule in BLOOM_FORMS[question.bloom]


def test_two_seeds_draw_on_different_sentences() -> None:
    facts = " ".join(
        f"The {name} queue keeps messages for {n} hours before the broker drops them."
        for name, n in [
            ("orders", 2),
            ("billing", 3),
            ("audit", 5),
            ("metrics", 7),
            ("alerts", 11),
            ("payments", 13),
            ("returns", 17),
            ("invoices", 19),
            ("shipping", 23),
            ("search", 29),
        ]
    )
    passage = Passage(n=1, source="queues.md", section="Queues", text=facts)
    pool = term_pool([FOIL, passage])

    def sentences(seed: int) -> set[str]:
        specs = [QuestionSpec.model_validate({"index": i, "kind": "mcq", "bloom": "remember"}) for i in range(4)]
        questions = [write_question(spec, [passage], pool, seed) for spec in specs]
        return {q.citations[0].quote for q in questions if q is not None}

    first, second = sentences(1), sentences(2)
    assert len(first & second) / min(len(first), len(second)) <= 0.4


PLANS = Passage(
    n=7,
    source="benefits.pdf",
    section="Plans",
    text=(
        "Northwind Standard is a basic plan that provides coverage for medical, vision, and dental services. "
        "The Northwind Standard plan is a contract between the employee and Northwind Health. "
        "A copay is a fixed amount that the member pays for a covered service. "
        "An appeal is a written request for the plan to reconsider a decision about a claim."
    ),
)


def test_a_description_of_the_same_subject_is_never_a_distractor_for_it() -> None:
    pool = term_pool([PLANS])
    offered = other_subjects("Northwind Standard plan", pool)
    assert not any(m.startswith("a basic plan") or m.startswith("a contract") for m in offered)
    assert any(m.startswith("a fixed amount") for m in offered)


def test_a_question_asks_one_clause_not_the_one_joined_to_it() -> None:
    tuned = Passage(
        n=5,
        source=SOURCE,
        section="Chapter 4: Monitoring > Handling slow consumers",
        text=(
            "The NATS server can be tuned to determine how much data can be buffered before a consumer is "
            "considered slow, and some officially supported clients allow buffer sizes to be adjusted."
        ),
    )
    pool = term_pool([FOIL, AUTH, TOOLS, tuned])
    spec = QuestionSpec.model_validate({"index": 0, "kind": "mcq", "bloom": "remember"})

    question = write_question(spec, [tuned], pool, seed=1)

    assert question is not None
    assert question.stem == (
        "What can be tuned to determine how much data can be buffered before a consumer is considered slow?"
    )
    assert question.citations[0].quote == tuned.text  # the key still rests on the whole sentence


def test_the_materials_main_actor_is_not_the_key_a_student_could_guess() -> None:
    """When most sentences of a server manual open with "The NATS server", "What can be tuned ...?"
    is answered by guessing it: no question asks for the material's main actor."""
    tuned = Passage(
        n=5,
        source=SOURCE,
        section="Chapter 4: Monitoring > Handling slow consumers",
        text="The NATS server can be tuned to determine how much data can be buffered before a consumer is slow.",
    )
    manual = Passage(
        n=7,
        source=SOURCE,
        section="Chapter 4: Monitoring > Logging",
        text=(
            "The NATS server provides logging options on the command line. "
            "The NATS server keeps count of the slow consumer errors it meets. "
            "The NATS server reports its state on a monitoring port."
        ),
    )
    spec = QuestionSpec.model_validate({"index": 0, "kind": "mcq", "bloom": "remember"})
    alone = write_question(spec, [tuned], term_pool([FOIL, AUTH, TOOLS, tuned]), seed=1)
    assert alone is not None
    assert alone.answer == "NATS server"  # one sentence of four about it: a fair question
    among = write_question(spec, [tuned], term_pool([FOIL, AUTH, TOOLS, tuned, manual]), seed=1)
    assert among is None or among.answer != "NATS server"


def test_a_stem_leaves_out_the_also_that_points_at_a_sentence_it_lacks() -> None:
    asked = {}
    for text in (
        "Northwind Health is also responsible for processing and paying claims correctly.",
        "In addition, the Allowed Amount also may vary depending on the type of service received.",
    ):
        doc = parse(text)
        subject = next(t for t in terms(doc) if t.role == "subject")
        asked[subject.text] = question_for(doc, subject)
    assert asked == {
        "Northwind Health": "What is responsible for processing and paying claims correctly?",
        "Allowed Amount": "What may vary depending on the type of service received?",
    }
