"""``make run`` with ``RAG_DATA_DIR`` outside the repository: ``make model`` fills that folder's
``models/``, the services find them there, and the system reaches ``ready``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.processes import free_port
from tests.support.http import ask
from tests.support.polling import eventually
from tests.support.system import ROOT

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
]

MODEL_SETTINGS = ("RAG_MODEL_DIR", "RAG_RETRIEVER_RERANKER_MODEL_DIR", "RAG_SECOND_MODEL_DIR", "RAG_SAMPLE_CORPUS")


async def test_make_run_with_the_data_folder_outside_the_repository_reaches_ready(
    tmp_path: Path, nats_server: LocalNatsServer
) -> None:
    data_dir = tmp_path / "rag-data"  # fresh, and not under the repository
    assert not data_dir.exists()
    assert ROOT not in data_dir.parents
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "otters.md").write_text("# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
    port = free_port()
    # under `make test` the outer make's flags would reach this one: not wanted here
    env = {k: v for k, v in os.environ.items() if k not in (*MODEL_SETTINGS, "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env |= {
        "RAG_DATA_DIR": str(data_dir),
        "RAG_SAMPLE_CORPUS": str(corpus),
        "RAG_GATEWAY_PORT": str(port),
        "NATS_URL": nats_server.url,
    }
    for name in ("ingest", "retriever", "router", "generator", "evaluator"):
        env[f"RAG_{name.upper()}_METRICS_PORT"] = "0"
    # `make run` as typed, minus building a virtualenv: this interpreter stands in for .venv's
    # (STAMP empty: no install step; -o install: nor the browser check)
    python = sys.executable
    command = ["make", "--no-print-directory", "-o", "install", "run", "STAMP=", f"PY={python}", f"PIP={python} -m pip"]
    log_path = tmp_path / "make-run.log"
    with log_path.open("wb") as log:
        runner = subprocess.Popen(  # noqa: ASYNC220 - returns at once; readiness is polled below
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:

            async def said_ready() -> bool:
                text = log_path.read_text(errors="replace")
                if runner.poll() is not None:
                    raise AssertionError(f"make run ended with {runner.returncode}:\n{text[-3000:]}")
                return f"ready: http://127.0.0.1:{port}" in text

            await eventually(said_ready, bool, timeout_s=300, what="make run to say ready")
            for folder in ("all-MiniLM-L6-v2-int8", "ms-marco-MiniLM-L-12-v2-int8", "bge-small-en-v1.5-int8"):
                assert (data_dir / "models" / folder / "model.onnx").is_file(), folder
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                assert (await client.get("/readyz")).json()["status"] == "ready"
                assert "Tuesday" in (await ask(client, "When is the otter pool cleaned?"))["answer"]
            os.killpg(runner.pid, signal.SIGINT)  # Ctrl-C in the terminal reaches make and the runner
            runner.wait(timeout=60)
        finally:
            if runner.poll() is None:
                os.killpg(runner.pid, signal.SIGKILL)
                runner.wait()
    text = log_path.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    assert "make model" not in text, text[-3000:]


@pytest.mark.parametrize(
    ("setting", "flag"),
    [("RAG_MODEL_DIR", ""), ("RAG_RETRIEVER_RERANKER_MODEL_DIR", "--reranker "), ("RAG_SECOND_MODEL_DIR", "--second ")],
)
def test_make_model_fills_the_folder_each_setting_names(tmp_path: Path, setting: str, flag: str) -> None:
    """Each model folder's own setting moves it alone; the others stay under RAG_DATA_DIR."""
    env = {k: v for k, v in os.environ.items() if k not in (*MODEL_SETTINGS, "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env |= {"RAG_DATA_DIR": str(tmp_path / "data"), setting: str(tmp_path / "elsewhere")}
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "model", "STAMP=", "PY=python", "PIP=pip"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assemblies = [line for line in planned.splitlines() if "assemble_model.py" in line]
    assert f"python scripts/assemble_model.py {flag}{tmp_path / 'elsewhere'}" in assemblies
    assert len(assemblies) == 3
    assert all(str(tmp_path / "data" / "models") in line for line in assemblies if "elsewhere" not in line)
