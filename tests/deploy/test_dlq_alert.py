"""The critical dead-letter alert fires on failures of the system, not on ordinary traffic.

Ordinary traffic dead-letters rejected input now and then (a file that does not parse: one letter
per bad upload); the alert once fired on more than 10 letters in 30 min of any kind, which a user
uploading a folder of bad files, or asking a collection with no index, reached in minutes.
``promtool test rules`` evaluates the shipped rules on synthetic series.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.deploy

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "rules" / "rag-alerts.yml"
ALERT = "RagDeadLetterQueueGrowing"
SUMMARY = "RAG_DLQ: {} dead letters in 30 min (failures of the system, or a flood)"


def case(series: dict[str, str], expected: list[str]) -> dict[str, object]:
    """One promtool test: these series for 90 min, the alert checked at 60 min (its summaries)."""
    return {
        "interval": "1m",
        "input_series": [{"series": name, "values": values} for name, values in series.items()],
        "alert_rule_test": [
            {
                "eval_time": "60m",
                "alertname": ALERT,
                "exp_alerts": [
                    {"exp_labels": {"severity": "critical"}, "exp_annotations": {"summary": SUMMARY.format(value)}}
                    for value in expected
                ],
            }
        ],
    }


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian: prometheus package)")
def test_the_dead_letter_alert_ignores_rejected_input_and_fires_on_failures_or_a_flood(tmp_path: Path) -> None:
    rejected = 'rag_dead_letters_total{service="ingest",stage="requested",reason="permanent"}'
    exhausted = 'rag_dead_letters_total{service="generator",stage="generator",reason="exhausted"}'
    stream = 'rag_stream_messages{stream="RAG_DLQ"}'
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "15s",
        "tests": [
            # a bad upload every 2 minutes: 15 letters in 30 min, all rejected input
            case({rejected: "0+0.5x90", stream: "0+0.5x90"}, []),
            # one question a minute failing after every retry: the system is broken
            case({exhausted: "0+1x90", stream: "0+1x90"}, ["30"]),
            # 300 letters in 30 min, whatever their reason
            case({rejected: "0+10x90", stream: "0+10x90"}, ["300"]),
        ],
    }
    path = tmp_path / "dlq-alert-test.yml"
    path.write_text(yaml.safe_dump(tests))
    result = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
