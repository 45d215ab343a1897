"""``--fail-under metric=value``: which metrics may gate a run, and checking a report against them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_scorecard.errors import UsageError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

# Metrics a --fail-under threshold may name: all "higher is better" rates. Latency, the flagged
# rate and violation counts are not gates of this kind (lower is better), so they are not listed.
GATEABLE_METRICS = (
    "retrieval.hit_at_1",
    "retrieval.hit_at_5",
    "retrieval.recall_at_3",
    "retrieval.recall_at_5",
    "retrieval.precision_at_3",
    "retrieval.f1_at_3",
    "retrieval.mrr_at_3",
    "retrieval.mrr_at_10",
    "retrieval.page_hit_at_5_pm1",
    "answers.refusal_accuracy",
    "answers.citation_validity",
    "answers.keyword_recall",
    "answers.key_fact_recall",
    "answers.flag_accuracy",
    "answers.tier_accuracy",
    "answers.injection_accuracy",
    "answers.rewrite_accuracy",
    "answers.answer_f1",
    "answers.content_recall",
    "answers.unanswerable_caught_rate",
)


def parse_thresholds(specs: Sequence[str]) -> dict[str, float]:
    """Parse ``metric=value`` pairs, rejecting unknown metrics with the list of valid ones."""
    thresholds: dict[str, float] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        name = name.strip()
        if not sep:
            raise UsageError(f"--fail-under {spec!r}: expected metric=value, e.g. retrieval.hit_at_5=0.8")
        if name not in GATEABLE_METRICS:
            raise UsageError(f"--fail-under: unknown metric {name!r}; valid metrics: {', '.join(GATEABLE_METRICS)}")
        try:
            thresholds[name] = float(value)
        except ValueError:
            raise UsageError(f"--fail-under {spec!r}: {value!r} is not a number") from None
    return thresholds


def metric_value(report: Mapping[str, Any], name: str) -> Any:
    """Look up a dotted metric name (``retrieval.hit_at_5``) in a report's JSON."""
    value: Any = report
    for part in name.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def check_thresholds(report: Mapping[str, Any], thresholds: Mapping[str, float]) -> list[str]:
    """One message per metric below its threshold; a metric the set could not measure fails too."""
    failures = []
    for name, minimum in thresholds.items():
        value = metric_value(report, name)
        if value is None:
            failures.append(f"{name} was not measured (no question in this set checks it); threshold {minimum}")
        elif value < minimum:
            failures.append(f"{name} = {value:.4f} is below {minimum}")
    return failures
