"""The published retrieval recipe for assessments, step by step, with its constants."""

from __future__ import annotations

import pytest

from rag_common.wire.messages.assessment import Blueprint, QuestionSpec
from rag_retriever.assessment import (
    Scored,
    assign_topics,
    distribute_marks,
    expand_neighbours,
    fit_word_budget,
    in_unit,
    mmr_select,
    penalise_usage,
    plan_specs,
    reassign_topics,
    reciprocal_rank_fusion,
    record_usage,
    sections_of,
)
from rag_retriever.settings import AssessmentRecipeSettings

pytestmark = pytest.mark.unit


def chunk(doc: str, index: int, text: str, section: str = "S") -> dict[str, object]:
    return {"document_id": doc, "chunk_index": index, "text": text, "section": section, "source": f"{doc}.md"}


def scored(doc: str, index: int, score: float, text: str = "x", dense: list[float] | None = None) -> Scored:
    return Scored(key=(doc, index), score=score, payload=chunk(doc, index, text), dense=dense)


def test_the_constants_are_the_published_ones() -> None:
    s = AssessmentRecipeSettings()
    assert s.rrf_k == 60
    assert s.neighbours == 1
    assert s.tokens_per_word == 1.3
    assert s.usage_penalty == 0.85
    assert s.mmr_lambda == 0.7


def test_rrf_sums_one_over_k_plus_rank() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "c"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 62)
    assert [p for p, _ in reciprocal_rank_fusion([["a", "b", "c"], ["b", "c"]], k=60)] == ["b", "c", "a"]


def test_neighbours_join_index_plus_and_minus_one_of_the_same_section_only() -> None:
    chunks = {
        ("d", 4): chunk("d", 4, "Four."),
        ("d", 5): chunk("d", 5, "Five."),
        ("d", 6): chunk("d", 6, "Six."),
        ("d", 7): chunk("d", 7, "Seven.", section="Other"),
        ("d", 3): chunk("d", 3, "Three."),
    }
    expanded = expand_neighbours([Scored(("d", 5), 1.0, chunks[("d", 5)])], chunks, radius=1)
    assert expanded[0].payload["text"] == "Four.\nFive.\nSix."
    assert expanded[0].payload["chunk_span"] == [4, 6]
    other = expand_neighbours([Scored(("d", 6), 1.0, chunks[("d", 6)])], chunks, radius=1)
    assert other[0].payload["text"] == "Five.\nSix."  # chunk 7 is another section


def test_the_budget_counts_words_times_1_3_and_truncates_the_last_chunk() -> None:
    ten = " ".join(f"w{i}" for i in range(10))  # 13 tokens
    three = [scored("a", 0, 1, ten), scored("b", 0, 0.9, ten), scored("c", 0, 0.8, ten), scored("d", 0, 0.7, ten)]
    kept = fit_word_budget(three, 30, 1.3)  # 13 + 13 tokens, 4 left: int(4 / 1.3) = 3 words of the third
    assert [k.payload["text"] for k in kept] == [ten, ten, "w0 w1 w2"]
    kept = fit_word_budget([scored("a", 0, 1, ten), scored("b", 0, 0.9, ten)], 20, 1.3)
    assert [k.payload["text"] for k in kept] == [ten, "w0 w1 w2 w3 w4"]  # 7 tokens left -> 5 words
    assert kept[1].payload["truncated"] is True


def test_usage_penalty_is_0_85_to_the_power_of_times_used() -> None:
    a, b = scored("a", 0, 1.0), scored("b", 0, 0.9)
    after = penalise_usage([a, b], {("a", 0): 2}, 0.85)
    assert [c.key for c in after] == [("b", 0), ("a", 0)]
    assert after[1].score == pytest.approx(1.0 * 0.85**2)
    assert after[0].score == pytest.approx(0.9)
    used: dict[tuple[str, int], int] = {}
    record_usage(used, [Scored(("d", 5), 1.0, {**chunk("d", 5, "x"), "chunk_span": [4, 6]})])
    assert used == {("d", 4): 1, ("d", 5): 1, ("d", 6): 1}


def test_mmr_with_lambda_0_7_prefers_a_different_passage_over_a_near_copy() -> None:
    best = Scored(("a", 0), 1.0, chunk("a", 0, "x", section="A"), [1.0, 0.0])
    copy = Scored(("b", 0), 0.95, chunk("b", 0, "x", section="B"), [0.99, 0.141])
    other = Scored(("c", 0), 0.9, chunk("c", 0, "x", section="C"), [0.0, 1.0])
    low = Scored(("d", 0), 0.0, chunk("d", 0, "x", section="D"), [0.7, 0.7])
    # relevance over the candidates: copy 0.95, other 0.9; copy's redundancy 0.99 costs 0.3 * 0.99
    assert [c.key for c in mmr_select([best, copy, other, low], 2, 0.7)] == [("a", 0), ("c", 0)]
    # with λ = 1 relevance alone decides
    assert [c.key for c in mmr_select([best, copy, other, low], 2, 1.0)] == [("a", 0), ("b", 0)]


def test_plan_counts_marks_levels_and_units() -> None:
    blueprint = Blueprint(
        counts={"mcq": 2, "short": 1, "long": 1},
        bloom_levels=["remember", "evaluate"],
        total_marks=20,
        units=["a.md", "b.md"],
    )
    specs = plan_specs(blueprint)
    assert [s.kind for s in specs] == ["mcq", "mcq", "short", "long"]
    assert sum(s.marks for s in specs) == 20
    assert [s.unit for s in specs] == ["a.md", "b.md", "a.md", "b.md"]
    assert [s.bloom for s in specs] == ["remember", "remember", "remember", "evaluate"]
    assert distribute_marks(["mcq", "short", "long"], None) == [1.0, 3.0, 6.0]


def test_units_are_documents_or_heading_paths() -> None:
    assert in_unit("billing.md", ["Billing", "Refunds"], "billing.md")
    assert in_unit("billing.md", ["Billing", "Refunds"], "Billing > Refunds")
    assert in_unit("billing.md", ["Billing", "Refunds"], "refunds")
    assert in_unit("billing.md", ["Billing", "Refunds"], "billing.md > Billing")
    assert not in_unit("billing.md", ["Billing", "Plans"], "Billing > Refunds")
    sections = sections_of(
        [
            {**chunk("d", 0, " ".join(["w"] * 30)), "section_path": ["Billing", "Plans"]},
            {**chunk("d", 1, " ".join(["w"] * 30)), "section_path": ["Billing", "Refunds"]},
        ]
    )
    specs = assign_topics(plan_specs(Blueprint(counts={"mcq": 2})), sections, seed=3)
    assert sorted(s.topic for s in specs) == ["d.md > Billing > Plans", "d.md > Billing > Refunds"]


def test_a_question_written_again_gets_a_section_of_its_unit_that_no_question_drew_on() -> None:
    def section(path: list[str], words: int, doc: str = "d") -> dict[str, object]:
        return {**chunk(doc, len(path) * 100 + words, " ".join(["w"] * words)), "section_path": path}

    sections = sections_of(
        [
            section(["Billing", "Plans"], 30),
            section(["Billing", "Refunds"], 40),
            section(["Billing", "Invoices"], 90),
            section(["Billing", "Taxes"], 60),
            section(["Security", "Keys"], 50, doc="s"),
        ]
    )
    taken = {"d.md > Billing > Plans", "d.md > Billing > Refunds"}
    redo = [
        QuestionSpec(index=0, kind="short", unit="d.md", topic="d.md > Billing > Plans"),
        QuestionSpec(index=1, kind="long", unit="d.md", topic="d.md > Billing > Refunds"),
        QuestionSpec(index=2, kind="mcq", unit="Security", topic="s.md > Security > Keys"),
    ]
    short, long, only = reassign_topics(redo, sections, taken | {"s.md > Security > Keys"}, seed=1)
    # another section of the unit, never one a question of the paper drew on, nor the same twice
    assert {long.topic, short.topic} == {"d.md > Billing > Invoices", "d.md > Billing > Taxes"}
    # a unit with no other section keeps its own: the recipe then ranks the chunks it used last
    assert only.topic == "s.md > Security > Keys"
    assert [s.index for s in (short, long, only)] == [0, 1, 2]
    assert short.kind == "short"


def test_learning_objectives_and_exercises_are_never_a_questions_topic() -> None:
    from rag_retriever.units import Section

    sections = [
        Section("course.docx", ("Chapter 1: Tokens", "Learning objectives"), 60, 1),
        Section("course.docx", ("Chapter 1: Tokens", "Bcrypted tokens"), 80, 1),
        Section("course.docx", ("Chapter 1: Tokens", "Exercises"), 60, 1),
        Section("course.docx", ("About this course",), 60, 1),
        Section("course.docx", ("Chapter 1: Tokens", "Token authentication"), 90, 1),
    ]
    blueprint = Blueprint(counts={"mcq": 4, "short": 2}, bloom_levels=["remember", "analyze"])
    for seed in (1, 2, 3):
        topics = {spec.topic for spec in assign_topics(plan_specs(blueprint), sections, seed=seed)}
        assert topics <= {
            "course.docx > Chapter 1: Tokens > Bcrypted tokens",
            "course.docx > Chapter 1: Tokens > Token authentication",
        }


def test_the_two_long_questions_go_to_the_highest_levels_asked() -> None:
    blueprint = Blueprint(
        counts={"long": 2, "short": 5}, bloom_levels=["remember", "understand", "analyze", "evaluate"]
    )
    specs = plan_specs(blueprint)
    assert [s.bloom for s in specs if s.kind == "long"] == ["evaluate", "analyze"]
    assert {s.bloom for s in specs if s.kind == "short"} == {"remember", "understand", "analyze", "evaluate"}


def test_any_two_seeds_of_a_four_draw_first_on_different_sections_from_2_5_times_enough() -> None:
    from itertools import combinations

    from rag_retriever.units import Section

    blueprint = Blueprint(counts={"mcq": 6, "short": 2}, bloom_levels=["remember"])

    def topics(seed: int, sections: int) -> set[str]:
        unit = [Section("ops.md", ("Operations", f"Service {n}"), 80 + n, 1) for n in range(sections)]
        return {spec.topic for spec in assign_topics(plan_specs(blueprint), unit, seed)}

    for four in (0, 4, 8):  # 1 and 3 as much as 1 and 2: not the same half for two odd seeds
        papers = {seed: topics(seed, 20) for seed in range(four, four + 4)}
        for a, b in combinations(papers, 2):
            assert len(papers[a] & papers[b]) / 8 <= 0.4, (a, b, sorted(papers[a] & papers[b]))
    # Seeds of different fours order the sections independently: they share about 8 / 40 of them.
    papers = {seed: topics(seed, 40) for seed in range(12)}
    shares = [len(papers[a] & papers[b]) / 8 for a, b in combinations(papers, 2) if a // 4 != b // 4]
    assert sum(shares) / len(shares) <= 0.3


def test_a_foil_is_cut_to_whole_sentences_so_no_distractor_ends_mid_word() -> None:
    from rag_retriever.assessment import sample_foils

    text = (
        "A deductible is a fixed amount that the member pays before the plan pays. "
        "Prior authorization is a process in which your insurance company reviews the request and verifies "
        "the need for the service."
    )
    chunks = [{**chunk("plan", 0, text), "section": "Terms"}]

    [foil] = sample_foils(chunks, limit=5, seed=1, max_chars=len(text) - 20)

    assert foil["text"] == "A deductible is a fixed amount that the member pays before the plan pays."
    assert sample_foils(chunks, limit=5, seed=1, max_chars=len(text))[0]["text"] == text


def test_the_same_seed_draws_the_same_foils_whatever_order_the_store_lists_its_chunks_in() -> None:
    from types import SimpleNamespace
    from typing import cast

    from rag_common.wire.messages.assessment import Assessment
    from rag_retriever.assessing import assessment_foils
    from rag_retriever.search import Retriever

    chunks = [
        chunk(f"doc{d}", i, f"Fact {d}-{i} of the handbook is stated in full here.") for d in range(6) for i in range(8)
    ]
    job = Assessment(id="a1", request_id="r1", blueprint=Blueprint(collection="c", counts={"mcq": 1}, seed=3))

    def foils(order: list[dict[str, object]]) -> list[str]:
        store = SimpleNamespace(collection_exists=lambda _c: True, scroll_chunks=lambda _c, _limit: list(order))
        return [
            p.text
            for p in assessment_foils(cast(Retriever, SimpleNamespace(store=store)), AssessmentRecipeSettings(), job)
        ]

    # The store lists points by id, which changes with the index version: the same chunks, reordered.
    assert foils(chunks) == foils(list(reversed(chunks))) == foils(sorted(chunks, key=lambda c: str(c["text"])[::-1]))
