"""The evaluation is ``rag-eval``, a command of the harness's own, beside ``rag``.

The harness sits above the services (it can start them all), so the client, a library under
``libs/``, neither imports nor starts it; the package installs both commands.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

from rag_client.cli import main as rag
from rag_scorecard.cli import build_parser
from rag_scorecard.cli import main as rag_eval

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def test_rag_eval_is_installed_as_the_harness_command() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["rag"] == "rag_client.cli:run"
    module, function = scripts["rag-eval"].split(":")
    assert module.startswith("rag_scorecard.")
    assert callable(getattr(importlib.import_module(module), function))


def test_rag_eval_help_names_itself(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        rag_eval(["--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert out.startswith("usage: rag-eval")
    assert "--dataset" in out
    assert "--fail-under" in out


def test_rag_help_points_at_rag_eval_and_has_no_eval_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        rag(["--help"])
    assert "rag-eval --dataset DIR" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        rag(["eval", "--dataset", "x"])
    assert exited.value.code == 2
    assert "invalid choice: 'eval'" in capsys.readouterr().err


def test_rag_eval_reads_the_gateway_from_rag_url_as_rag_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_URL", "http://rag.internal:8000")
    assert build_parser().parse_args(["--dataset", "d"]).url == "http://rag.internal:8000"
    assert build_parser().parse_args(["--dataset", "d", "--url", "http://other:1"]).url == "http://other:1"


def test_rag_eval_names_a_missing_dataset_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-dataset"
    code = rag_eval(["--url", "http://127.0.0.1:9", "--dataset", str(missing), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2, captured.err  # a usage error, found before any system is asked
    assert "error:" in captured.err
    assert str(missing) in captured.err
