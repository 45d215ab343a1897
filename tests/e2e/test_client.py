"""The Python client against the running system: ask, stream, upload a file and a folder, list."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from rag_client import Answer, AsyncRagClient, Flag, RagClient, RagError
from tests.support.system import System

pytestmark = pytest.mark.e2e


async def test_async_ask_returns_a_typed_answer(system: System) -> None:
    async with AsyncRagClient(system.base_url) as rag:
        answer = await rag.ask("What is the API rate limit per token?")
    assert isinstance(answer, Answer)
    assert "600" in answer.answer
    assert "api.md" in {c.source for c in answer.citations}
    assert answer.flags[Flag.REFUSED] is False
    assert answer.timings_ms["total"] > 0


async def test_async_stream_yields_tokens_then_the_answer(system: System) -> None:
    async with AsyncRagClient(system.base_url) as rag:
        items = [item async for item in rag.stream("What uptime does the Enterprise SLA promise?")]
    tokens = [i for i in items if isinstance(i, str)]
    assert tokens
    assert isinstance(items[-1], Answer)
    assert all(isinstance(i, str) for i in items[:-1])
    assert "".join(tokens) == items[-1].answer
    assert "99.95%" in items[-1].answer


async def test_sync_client_streams_and_follows_up_in_a_session(system: System) -> None:
    session = f"client-{uuid.uuid4().hex[:8]}"

    def conversation() -> tuple[list[str | Answer], Answer]:
        with RagClient(system.base_url) as rag:
            first = list(rag.stream("How much does the Pro plan cost per user per month?", session_id=session))
            second = rag.ask("And what does it cost per year?", session_id=session)
        return first, second

    first, second = await asyncio.to_thread(conversation)
    assert isinstance(first[-1], Answer)
    assert first[-1].citations
    assert second.rewritten_question
    assert "pro" in second.rewritten_question.lower()


async def test_sync_upload_waits_for_indexed_and_errors_are_typed(system: System, tmp_path: Path) -> None:
    note = tmp_path / "client-note.md"
    note.write_text("# Client note\n\nThe client test mascot is a purple heron named Quillon.\n")

    def upload_and_ask() -> tuple[str, int, str]:
        with RagClient(system.base_url) as rag:
            status = rag.upload(note, collection="client-sync")
            answer = rag.ask("What is the client test mascot?", collection="client-sync")
            with pytest.raises(RagError) as caught:
                rag.document("no-such-document")
            assert caught.value.status == 404
            assert caught.value.code == "document_not_found"
            return status.status, status.chunks, answer.answer

    state, chunks, text = await asyncio.to_thread(upload_and_ask)
    assert state == "indexed"
    assert chunks >= 1
    assert "Quillon" in text


async def test_async_upload_folder_and_list(system: System, tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    (folder / "team").mkdir(parents=True)
    (folder / "team" / "roster.md").write_text("# Roster\n\nThe on-call lead this week is Marisol Okafor.\n")
    (folder / "glossary.txt").write_text("GLOSSARY\n\nA widget-hour is one widget running for one hour.\n")
    async with AsyncRagClient(system.base_url) as rag:
        statuses = await rag.upload_folder(folder, collection="client-folder")
        listed = await rag.documents("client-folder")
        names = [c.name for c in await rag.collections()]
    assert {k: v.status for k, v in statuses.items()} == {"glossary.txt": "indexed", "team/roster.md": "indexed"}
    assert sorted(d.source for d in listed) == ["glossary.txt", "team/roster.md"]
    assert "client-folder" in names


async def test_a_streamed_question_refused_before_it_is_queued_keeps_its_http_status(system: System) -> None:
    """A stream the gateway refuses before queuing the question (here a session of another
    collection: 409, as ``POST /v1/query`` says) says that status in its ``error`` event, so the
    client (and ``rag ask``, which streams) report 409, not a made-up 500."""
    session = f"client-{uuid.uuid4().hex[:8]}"
    async with AsyncRagClient(system.base_url) as rag:
        await rag.ask("What is the API rate limit per token?", session_id=session)
        with pytest.raises(RagError) as refused:
            async for _ in rag.stream("And how much does it cost?", session_id=session, collection="other-team"):
                pass
    assert (refused.value.status, refused.value.code) == (409, "session_collection_mismatch")
    assert refused.value.request_id


async def test_upload_folder_names_the_file_the_gateway_refuses(system: System, tmp_path: Path) -> None:
    """A folder holding an empty file: the error says which file (422 empty_file), sync and async."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a-notes.md").write_text("# Notes\n\nThe quarry gate closes at 16:45.\n")
    (folder / "b-empty.md").write_bytes(b"")
    with pytest.raises(RagError) as refused:
        await asyncio.to_thread(RagClient(system.base_url).upload_folder, folder, collection="folder-refused")
    assert (refused.value.status, refused.value.code) == (422, "empty_file")
    assert str(refused.value) == "422 empty_file: b-empty.md: the uploaded file is empty"
    async with AsyncRagClient(system.base_url) as rag:
        with pytest.raises(RagError) as refused_async:
            await rag.upload_folder(folder, collection="folder-refused")
    assert str(refused_async.value) == "422 empty_file: b-empty.md: the uploaded file is empty"
