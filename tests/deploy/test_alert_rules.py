"""The alert rules: ``promtool test rules`` proves what pages (a sustained share of failures) and
what does not (one user's bad upload), and every alert links a runbook section that exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
OPERATIONS = ROOT / "docs" / "OPERATIONS.md"


def alerts() -> list[dict[str, Any]]:
    rules = yaml.safe_load((PROMETHEUS / "rules" / "rag-alerts.yml").read_text())
    return [rule for group in rules["groups"] for rule in group["rules"] if "alert" in rule]


def sections(markdown: str) -> dict[str, str]:
    """Each heading's GitHub anchor and the text under it (up to the next heading)."""
    found: dict[str, str] = {}
    parts = re.split(r"^#{2,4} (.+)$", markdown, flags=re.MULTILINE)
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        anchor = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        found[anchor] = body
    return found


def test_promtool_rule_tests_pass() -> None:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool is not installed (make install: apt-get install prometheus)")
    files = sorted((PROMETHEUS / "tests").glob("*.yml"))
    assert files
    result = subprocess.run([tool, "test", "rules", *map(str, files)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_rule_tests_prove_a_bad_upload_is_quiet_and_a_sustained_rate_pages() -> None:
    """The rule tests hold both cases for the input-failure alert and the old noisy ones."""
    tests = yaml.safe_load((PROMETHEUS / "tests" / "rag-alerts.test.yml").read_text())["tests"]
    quiet = {c["alertname"] for t in tests for c in t["alert_rule_test"] if c["exp_alerts"] == []}
    fires = {c["alertname"] for t in tests for c in t["alert_rule_test"] if c["exp_alerts"]}
    assert {"RagStageErrors", "RagMessagesDeadLettered", "RagInputFailuresSustained"} <= quiet
    assert {"RagInputFailuresSustained", "RagStageErrors", "RagMessagesDeadLettered"} <= fires


def test_every_alert_has_a_description_and_a_runbook_section() -> None:
    runbooks = sections(OPERATIONS.read_text())
    assert len(alerts()) >= 12
    for alert in alerts():
        name, notes = alert["alert"], alert.get("annotations", {})
        assert notes.get("summary"), f"{name} has no description"
        assert len(notes.get("description", "")) > 30, f"{name} has no description"
        assert notes.get("runbook_url") == f"docs/OPERATIONS.md#{name.lower()}", name
        section = runbooks.get(name.lower())
        assert section is not None, f"docs/OPERATIONS.md has no section {name}"
        assert "**Look at:**" in section, f"{name}: what to look at and what to do"
        assert "**Do:**" in section, f"{name}: what to look at and what to do"
