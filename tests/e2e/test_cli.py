"""The ``rag`` command against the running system (its ``main`` with argv, in a worker thread)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rag_client.cli import main
from rag_scorecard.cli import main as rag_eval
from tests.support.system import SAMPLE_CORPUS, System

pytestmark = pytest.mark.e2e


async def rag(capture: pytest.CaptureFixture[str], *argv: str, lines: list[str] | None = None) -> tuple[int, str]:
    feed: Iterator[str] = iter(lines or [])

    def read(prompt: str) -> str:
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    code = await asyncio.to_thread(main, list(argv), read)
    captured = capture.readouterr()
    return code, captured.out + captured.err


async def test_ingest_sync_uploads_changes_and_deletes_what_vanished(
    system: System, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "alpha.md").write_text("# Alpha\n\nAlpha station opens at 06:40 every weekday.\n")
    (folder / "beta.md").write_text("# Beta\n\nBeta station closes at 23:10 on Sundays.\n")
    code, out = await rag(capsys, "--url", system.base_url, "ingest", str(folder), "--collection", "cli-sync")
    assert code == 0, out
    assert "2 uploaded (2 indexed, 0 failed), 0 unchanged, 0 deleted" in out

    (folder / "alpha.md").write_text("# Alpha\n\nAlpha station opens at 05:55 every weekday.\n")
    (folder / "beta.md").unlink()
    (folder / "gamma.txt").write_text("GAMMA\n\nGamma station has a bicycle repair stand.\n")
    code, out = await rag(capsys, "--url", system.base_url, "ingest", str(folder), "--collection", "cli-sync", "--sync")
    assert code == 0, out
    assert "2 uploaded (2 indexed, 0 failed), 0 unchanged, 1 deleted" in out

    code, out = await rag(capsys, "--url", system.base_url, "ingest", str(folder), "--collection", "cli-sync", "--sync")
    assert "0 uploaded (0 indexed, 0 failed), 2 unchanged, 0 deleted" in out

    async with httpx.AsyncClient(base_url=system.base_url) as http:
        records = (await http.get("/v1/documents", params={"collection": "cli-sync"})).json()["documents"]
    assert {r["source"]: r["status"] for r in records if r["status"] != "deleting"} == {
        "alpha.md": "indexed",
        "gamma.txt": "indexed",
    }

    code, out = await rag(
        capsys, "--url", system.base_url, "ask", "When", "does", "Alpha", "station", "open?", "--collection", "cli-sync"
    )
    assert code == 0
    assert "05:55" in out
    assert "Sources:" in out
    assert "alpha.md" in out


async def test_ask_prints_answer_sources_flags_and_route(system: System, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = await rag(capsys, "--url", system.base_url, "ask", "What is the API rate limit per token?")
    assert code == 0
    assert "600" in out
    assert "[1] api.md · Rate limits" in out
    assert "Flags: none" in out
    assert "Route: fast" in out


async def test_ask_json_and_error_exit_code(system: System, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = await rag(capsys, "--url", system.base_url, "ask", "--json", "What is the API rate limit per token?")
    assert code == 0
    assert "api.md" in {c["source"] for c in json.loads(out)["citations"]}
    code, out = await rag(capsys, "--url", system.base_url, "ask", "Bad collection?", "--collection", "Not Valid")
    assert code == 1
    assert "error: 422 invalid_request" in out


async def test_chat_keeps_the_conversation(system: System, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["How much does the Pro plan cost per user per month?", "And what does it cost per year?", "/quit"]
    code, out = await rag(capsys, "--url", system.base_url, "chat", "--session", "cli-chat-test", lines=lines)
    assert code == 0
    assert "Conversation cli-chat-test" in out
    assert out.count("Sources:") == 2
    async with httpx.AsyncClient(base_url=system.base_url) as http:
        session = (await http.get("/v1/sessions/cli-chat-test")).json()
    assert [t["question"] for t in session["turns"]] == lines[:2]
    assert session["turns"][1]["rewritten_question"]


async def test_docs_lists_the_collection(system: System, capsys: pytest.CaptureFixture[str]) -> None:
    async with httpx.AsyncClient(base_url=system.base_url) as http:
        listed = (await http.get("/v1/documents", params={"collection": "default"})).json()["documents"]
    code, out = await rag(capsys, "--url", system.base_url, "docs", "--collection", "default")
    assert code == 0
    assert "pricing.md" in out
    assert "indexed" in out
    assert f"{len(listed)} documents" in out
    assert len(listed) >= len(system.corpus.statuses)


async def test_rag_eval_runs_the_harness_on_a_small_dataset(
    system: System, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rag-eval`` (the harness's own command, beside ``rag``) scores a dataset against the system."""
    dataset = tmp_path / "mini"
    (dataset / "corpus").mkdir(parents=True)
    shutil.copy(SAMPLE_CORPUS / "api.md", dataset / "corpus" / "api.md")
    question = {
        "id": "m1",
        "question": "What is the API rate limit per token?",
        "expected_sources": [{"source": "api.md", "section": "Rate limits"}],
        "expected_keywords": ["600"],
        "expected_flags": {"refused": False},
    }
    (dataset / "questions.jsonl").write_text(json.dumps(question) + "\n")
    reports = tmp_path / "reports"
    code = await asyncio.to_thread(
        rag_eval,
        [
            "--url",
            system.base_url,
            "--dataset",
            str(dataset),
            "--report-dir",
            str(reports),
            "--no-progress",
        ],
    )
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert code == 0, out
    assert "mini: 1 questions" in out
    written = list(reports.glob("eval-mini*.json"))
    assert written
    assert json.loads(written[0].read_text())["questions"] == 1


def test_rag_script_is_installed() -> None:
    script = Path(sys.executable).with_name("rag")
    assert script.exists(), "pip install -e . installs the `rag` script"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0
    assert all(command in result.stdout for command in ("ingest", "ask", "chat", "docs"))
    assert "rag-eval" in result.stdout  # the evaluation is a command of its own


async def test_ingest_names_a_file_the_gateway_refuses_and_uploads_the_others(
    system: System, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One empty file in a folder (the gateway refuses it: 422) is named with the reason; the
    other files are still uploaded and indexed, and the exit status says something failed."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a-empty.md").write_bytes(b"")
    (folder / "b-lime.md").write_text("# Lime\n\nLime trees need eight hours of sun a day.\n")
    code, out = await rag(capsys, "--url", system.base_url, "ingest", str(folder), "--collection", "cli-refused")
    said = " ".join(out.split())  # the console wraps long lines
    assert code == 1, out
    assert "rejected: a-empty.md: 422 empty_file: the uploaded file is empty" in said
    assert "cli-refused: 1 uploaded (1 indexed, 0 failed), 1 rejected, 0 unchanged, 0 deleted" in said
    async with httpx.AsyncClient(base_url=system.base_url) as http:
        records = (await http.get("/v1/documents", params={"collection": "cli-refused"})).json()["documents"]
    assert {r["source"]: r["status"] for r in records} == {"b-lime.md": "indexed"}


async def test_ingest_lists_each_skipped_file_with_its_reason(
    system: System, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files of a type the system cannot read are named, one line each with why, not silently left out."""
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "plum.md").write_text("# Plum\n\nPlum trees flower in April.\n")
    (folder / "sub" / "notes.doc").write_bytes(b"\xd0\xcf\x11\xe0 not read")
    (folder / "Makefile").write_text("all:\n")
    code, out = await rag(capsys, "--url", system.base_url, "ingest", str(folder), "--collection", "cli-skipped")
    assert code == 0, out
    lines = out.splitlines()
    supported = ".md, .markdown, .txt, .pdf, .docx, .pptx, .html, .htm"
    assert f"skipped: sub/notes.doc: unsupported type .doc (supported: {supported})" in lines
    assert f"skipped: Makefile: unsupported file without an extension (supported: {supported})" in lines
    assert "cli-skipped: 1 uploaded (1 indexed, 0 failed), 2 skipped, 0 unchanged, 0 deleted" in out


async def test_docs_shows_whole_ids_when_not_on_a_terminal(system: System, capsys: pytest.CaptureFixture[str]) -> None:
    """Piped (``rag docs | grep``), every document id is printed whole, so it can be copied into ``rag``."""
    async with httpx.AsyncClient(base_url=system.base_url) as http:
        listed = (await http.get("/v1/documents", params={"collection": "default"})).json()["documents"]
    code, out = await rag(capsys, "--url", system.base_url, "docs", "--collection", "default")
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines() if "\t" in line]
    assert rows[0] == ["collection", "source", "status", "chunks", "updated", "document id"]
    assert {row[5] for row in rows[1:]} == {r["document_id"] for r in listed}
    assert {row[1] for row in rows[1:]} == {r["source"] for r in listed}
    assert f"{len(listed)} documents (--json for every field)" in out
