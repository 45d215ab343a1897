"""CI gate: the repo's own golden set (samples/orbitly) through the whole system, scored by the harness.

The thresholds go through the same mechanism as ``make eval EVAL_ARGS='--fail-under ...'``, so a
failure here reads exactly like a failing ``make eval``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_evaluator.harness import EvalOptions, parse_thresholds, run_evaluation
from tests.conftest import ROOT, System

pytestmark = pytest.mark.e2e

GOLDEN_SET = ROOT / "samples" / "orbitly"

# Each threshold sits a little below what was measured (see the test's docstring), so a real
# regression fails while a one-question change on a set this small does not always.
THRESHOLDS = [
    "retrieval.hit_at_1=0.80",
    "retrieval.hit_at_5=0.93",
    "retrieval.recall_at_3=0.90",
    "retrieval.mrr_at_3=0.87",
    "answers.refusal_accuracy=0.90",
    "answers.citation_validity=0.95",
    "answers.keyword_recall=0.68",
    "answers.flag_accuracy=0.90",
    "answers.tier_accuracy=0.90",
]


async def test_golden_set_meets_its_thresholds(system: System, tmp_path: Path) -> None:
    """The golden set, ingested into the harness's own collection, meets every threshold.

    Measured when the thresholds were set (extractive answers, no LLM; 47 questions: 41 single
    items and 3 conversations of 2 turns; 37 with gold sources): hit@1 0.865, hit@5 0.973,
    recall@3 0.941, MRR@3 0.914, refusal accuracy 0.936 (the two prompt-injection items are
    answered, not refused, and the follow-up turn c03.2 is refused), citation validity 1.0, keyword
    recall 0.730, flag accuracy 0.951, tier accuracy 1.0. A second run re-indexes nothing: every
    document reports ``unchanged``.
    """
    options = EvalOptions(
        dataset=GOLDEN_SET,
        url=system.base_url,
        report_dir=tmp_path,
        fail_under=parse_thresholds(THRESHOLDS),
        progress=False,
    )
    result = await run_evaluation(options, say=lambda _: None)
    report = result.report
    assert result.passed, "\n".join(result.failures)
    assert report["collection"] == "eval-orbitly"
    assert report["questions"] == 47 and report["errors"] == []
    assert report["ingest"]["failed"] == 0 and report["ingest"]["gold_sources_missing"] == []
    assert (tmp_path / "eval-orbitly.json").is_file() and (tmp_path / "eval-orbitly.md").is_file()
    stages = report["latency_ms"]["stages"]
    assert {"router", "retriever", "generator", "evaluator", "total"} <= stages.keys()

    again = await run_evaluation(EvalOptions(dataset=GOLDEN_SET, url=system.base_url, report_dir=None, progress=False))
    assert again.report["ingest"]["unchanged"] == again.report["ingest"]["documents"] == 14
    assert again.report["retrieval"] == report["retrieval"]
