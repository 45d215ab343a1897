"""The miss analysis: where the gold sections missed in the first three passages are."""

import pytest

from benchmarks.miss_analysis import classify

pytestmark = pytest.mark.unit


def detail(qid: str, golds: list[tuple[str, str]], got: list[tuple[str, str]]) -> dict[str, object]:
    return {
        "id": qid,
        "gold": [{"source": s, "section": t} for s, t in golds],
        "got": [[s, t, None] for s, t in got],
    }


def test_a_sibling_section_ranked_fourth_is_a_same_file_miss_and_a_found_question_is_skipped() -> None:
    missed = detail(
        "q1",
        [("tools.md", "Overview"), ("tools.md", "Parameters")],
        [("tools.md", "Overview"), ("tools.md", "Examples"), ("batch.md", "Batches"), ("tools.md", "Parameters")],
    )
    found = detail("q2", [("a.md", "A")], [("a.md", "A"), ("b.md", "B"), ("c.md", "C")])

    counts = classify([missed, found])

    assert counts["questions with recall@3 < 1"] == 1
    assert counts["ids"] == ["q1"]
    assert counts["same file as the first passage"] == 1
    assert counts["rank 4-5"] == 1
    assert counts["generic heading: no"] == 1


def test_a_generic_gold_section_of_another_file_never_retrieved() -> None:
    question = detail("q3", [("a.md", "A"), ("guide.md", "Next steps")], [("a.md", "A"), ("b.md", "B"), ("c.md", "C")])

    counts = classify([question])

    assert counts["same file as a first-three passage: no"] == 1
    assert counts["rank not in the first 50"] == 1
    assert counts["generic heading: yes"] == 1
