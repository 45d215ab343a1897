"""The dead-letter stream is bounded: in bytes and age, in what one letter keeps, and in what goes
there at all (a question to a collection with no index yet is answered 404, not dead-lettered)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import nats
import pytest
from nats.js.api import DiscardPolicy

from rag_common.config.settings import ServiceSettings
from rag_common.transport.consuming import DLQ_PAYLOAD_MAX_BYTES, PAYLOAD_CUT_MARK, letter_payload
from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.http import wait_for_status
from tests.support.system import stack_options

pytestmark = pytest.mark.integration


async def dead_letters(url: str) -> tuple[int, int]:
    connection = await nats.connect(url)
    try:
        state = (await connection.jetstream().stream_info(subjects.DLQ_STREAM)).state
        return state.messages, state.bytes
    finally:
        await connection.close()


async def test_the_stream_has_byte_and_age_limits_and_a_big_letter_is_cut(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services, options.gateway = ("router",), False
    async with Stack(options):
        nc = await nats.connect(nats_server.url)
        try:
            js = nc.jetstream()
            config = (await js.stream_info(subjects.DLQ_STREAM)).config
            defaults = ServiceSettings()
            assert config.max_bytes == defaults.dlq_max_bytes == 256 * 1024 * 1024
            assert config.max_age == defaults.dlq_max_age_s
            assert config.discard in (DiscardPolicy.OLD, "old")
            dead = await js.subscribe(f"{subjects.PREFIX}.dlq.query.>", ordered_consumer=True)
            broken = b"\xff" + b"x" * 600_000  # not a message at all, and big
            await js.publish(subjects.QUERY_REQUESTED, broken)
            raw = (await dead.next_msg(timeout=10)).data
        finally:
            await nc.close()
    letter = json.loads(raw)
    assert len(raw) < DLQ_PAYLOAD_MAX_BYTES + 2048
    assert letter["payload"].endswith(f"{PAYLOAD_CUT_MARK}600001 bytes in all]")
    assert "invalid QueryRequested" in letter["error"]


def test_a_small_payload_is_kept_whole_and_a_cut_never_splits_a_character() -> None:
    assert letter_payload(b'{"query": 1}') == '{"query": 1}'
    cut = letter_payload("é".encode() * 10, limit=5)  # 2-byte characters, cut inside the third
    assert cut == f"éé{PAYLOAD_CUT_MARK}20 bytes in all]"


async def test_questions_to_a_collection_with_no_index_are_answered_404_not_dead_lettered(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services = ("ingest", "router", "retriever")
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        # A collection with a document but no index: its only upload failed.
        failed = await client.post(
            "/v1/documents", files={"file": ("blob.md", os.urandom(4096))}, data={"collection": "empty"}
        )
        assert (await wait_for_status(client, failed.json()["document_id"]))["status"] == "failed"
        before = await dead_letters(nats_server.url)
        history = []
        for i in range(20):  # ~580 KB of earlier turns
            history += [{"role": "user", "content": f"question {i} " + "q" * 14_500}]
            history += [{"role": "assistant", "content": f"answer {i} " + "a" * 14_500}]
        for _ in range(10):
            chat = await client.post(
                "/v1/chat/completions",
                json={"model": "empty", "messages": [*history, {"role": "user", "content": "What does it cost?"}]},
            )
            assert chat.status_code == 404, chat.text
        query = await client.post("/v1/query", json={"question": "What does it cost?", "collection": "nope"})
        assert query.status_code == 404
        assert query.json()["error"]["code"] == "collection_not_found"
        assert await dead_letters(nats_server.url) == before
