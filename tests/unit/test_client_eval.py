"""``rag eval`` runs the offline harness as a process of its own: the client never imports it.

The harness sits above the services (it can start them all), so the client, a library under
``libs/``, hands it the command line instead; what the user sees is the harness's own output and
exit code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_client.cli import main

pytestmark = pytest.mark.unit


def test_rag_eval_help_is_the_harness_help(capfd: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "--help"])
    out = capfd.readouterr().out
    assert code == 0
    assert "usage: python -m rag_scorecard" in out
    assert "--dataset" in out
    assert "--fail-under" in out


def test_rag_eval_passes_the_harness_exit_code_and_message_on(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-dataset"
    code = main(["--url", "http://127.0.0.1:9", "eval", "--dataset", str(missing), "--no-progress"])
    captured = capfd.readouterr()
    assert code == 2, captured.err  # a usage error, found before any system is asked
    assert "error:" in captured.err
    assert str(missing) in captured.err
