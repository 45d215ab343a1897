"""The percentile and median helpers shared by the benchmarks and the evaluation reports."""

from __future__ import annotations

import pytest

from rag_scorecard.stats import median, paired_differences, percentile, summarize

pytestmark = pytest.mark.unit


def test_median_of_odd_sample_is_the_middle_value() -> None:
    assert median([5.0, 1.0, 3.0]) == 3.0


def test_median_of_even_sample_is_the_mean_of_the_middle_two() -> None:
    assert median([4, 1, 3, 2]) == 2.5


def test_percentile_interpolates_linearly_like_numpy() -> None:
    values = [10, 20, 30, 40, 50]  # numpy.percentile(values, 95) == 48.0, (values, 25) == 20.0
    assert percentile(values, 95) == pytest.approx(48.0)
    assert percentile(values, 25) == pytest.approx(20.0)
    assert percentile(values, 90) == pytest.approx(46.0)


def test_percentile_extremes_are_min_and_max() -> None:
    values = [7.0, -2.0, 3.5]
    assert percentile(values, 0) == -2.0
    assert percentile(values, 100) == 7.0


def test_percentile_of_one_value_is_that_value() -> None:
    assert percentile([42.0], 95) == 42.0


def test_percentile_does_not_reorder_the_callers_list() -> None:
    values = [3.0, 1.0, 2.0]
    percentile(values, 50)
    assert values == [3.0, 1.0, 2.0]


def test_percentile_accepts_a_generator() -> None:
    assert percentile((x for x in range(101)), 95) == pytest.approx(95.0)


@pytest.mark.parametrize("p", [-1, 100.5])
def test_percentile_out_of_range_is_an_error(p: float) -> None:
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], p)


def test_percentile_of_empty_sample_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        percentile([], 50)
    with pytest.raises(ValueError, match="empty"):
        median([])


def test_summarize_reports_the_usual_figures() -> None:
    summary = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert summary == {"n": 5, "p50": 3.0, "p95": 80.8, "mean": 22.0, "min": 1.0, "max": 100.0}


def test_summarize_of_empty_sample_gives_only_the_count() -> None:
    assert summarize([]) == {"n": 0}


def test_paired_differences_subtract_element_by_element() -> None:
    assert paired_differences([5.0, 7.0], [1.0, 10.0]) == [4.0, -3.0]
    with pytest.raises(ValueError, match="length"):
        paired_differences([1.0], [1.0, 2.0])
