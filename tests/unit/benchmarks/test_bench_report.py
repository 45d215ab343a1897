"""What ``make bench`` tells a reader: each figure beside its target, and a written report as the
Markdown tables docs/BENCHMARKS.md shows (``python -m benchmarks --table``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.__main__ import run
from benchmarks.report import Recorder, beside, write_report

pytestmark = pytest.mark.unit


def test_the_report_prints_the_targets_beside_the_figures() -> None:
    assert beside("overhead.nats_minus_inprocess_p50_ms", 6.8) == "target <= 2: MISSED"
    assert beside("overhead.nats_minus_inprocess_p50_ms", 1.9) == "target <= 2: met"
    assert beside("throughput.retriever_x1.c8_qps", 36.5) == "target >= 36: met"
    assert beside("ingest.ratio", 0.89) == "target >= 0.9: MISSED"
    assert beside("query.c1.answer_over_retrieval", 1.5) == "target <= 1.5: met"
    assert beside("query.c8.e2e_p50_ms", 300.0) == ""


def test_table_prints_a_written_report_as_markdown_and_measures_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = Recorder()
    recorder.record("overhead.nats_minus_inprocess_p50_ms", 6.8, "ms", "paired", cores={"ours": 1.0, "others": 0.25})
    recorder.record("overhead.nats_minus_inprocess_p50_ms", 7.2, "ms", "paired", cores={"ours": 1.0, "others": 0.5})
    meta = {
        "started_at": "2026-01-01T00:00:00+0000",
        "machine": {"cores": 2, "cpu": "test cpu", "memory_gb": 24, "python": "3.12"},
        "git_commit": "abc1234",
        "args": {"runs": 2},
        "seconds_total": 12.0,
    }
    report = tmp_path / "bench.json"
    write_report(report, recorder, meta)
    capsys.readouterr()

    monkeypatch.setattr(sys, "argv", ["python -m benchmarks", "--table", str(report)])
    run()

    out = capsys.readouterr().out
    assert out.startswith(
        "Measured 2026-01-01T00:00:00+0000 on 2 cores (test cpu), 24 GB, Python 3.12, commit `abc1234`"
    )
    assert "| `overhead.nats_minus_inprocess_p50_ms` | 7.00 | ms | 6.80, 7.20 | 0.50 |" in out
    assert "`overhead.nats_minus_inprocess_p50_ms` | 7.00 | **miss** |" in out
    assert "not measured" in out  # the targets this report holds no figure for
