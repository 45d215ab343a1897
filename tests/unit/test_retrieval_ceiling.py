"""The sweep's recall@3 ceiling: what a perfect reordering of the first k passages would reach."""

from benchmarks.retrieval_sweep import recall_ceiling


def detail(golds: list[tuple[str, str]], got: list[tuple[str, str]]) -> dict[str, object]:
    return {
        "gold": [{"source": s, "section": t} for s, t in golds],
        "got": [[s, t, None] for s, t in got],
    }


FILLER = [("other.md", f"Section {i}") for i in range(10)]


def test_a_gold_section_found_deeper_raises_the_ceiling_only_from_its_depth() -> None:
    question = detail([("a.md", "One"), ("b.md", "Two")], [("a.md", "One"), *FILLER[:5], ("b.md", "Two")])

    ceiling = recall_ceiling([question], depths=(3, 5, 10))

    assert ceiling == {3: 0.5, 5: 0.5, 10: 1.0}


def test_no_more_than_three_gold_sections_count_and_questions_are_averaged() -> None:
    four = [("a.md", "One"), ("a.md", "Two"), ("a.md", "Three"), ("a.md", "Four")]
    found_all = detail(four, four)
    found_none = detail([("c.md", "Missing")], FILLER)

    ceiling = recall_ceiling([found_all, found_none], depths=(5,))

    assert ceiling == {5: round((3 / 4 + 0) / 2, 3)}
