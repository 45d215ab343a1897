"""The audit stream and the profile bucket on a real nats-server: retention, append-only, paging, overrides."""

from __future__ import annotations

import json
from pathlib import Path

import nats
import pytest
from nats.js.errors import APIError

from rag_common.config.texts import DEFAULT_GREETING, DEFAULT_REFUSAL, CollectionTexts
from rag_common.store.profiles import ProfileBook
from rag_common.wire import subjects
from rag_common.wire.messages import AuditEvent
from rag_devrun.natsserver import LocalNatsServer
from rag_gateway.audit import AuditLog, ensure_audit_stream
from rag_gateway.settings import GatewaySettings

pytestmark = pytest.mark.integration


async def test_the_audit_stream_keeps_its_retention_and_refuses_deletes(nats_server: LocalNatsServer) -> None:
    connection = await nats.connect(nats_server.url)
    try:
        js = connection.jetstream()
        await ensure_audit_stream(js, GatewaySettings(audit_max_age_s=3600, audit_max_bytes=8 * 1024 * 1024))
        await ensure_audit_stream(js, GatewaySettings(audit_max_age_s=7200, audit_max_bytes=8 * 1024 * 1024))
        config = (await js.stream_info(subjects.AUDIT_STREAM)).config
        assert config.max_age == 7200
        assert config.max_bytes == 8 * 1024 * 1024
        assert config.deny_delete
        assert config.deny_purge
        log = AuditLog(js, GatewaySettings())
        await log.record(AuditEvent(action="key_revoked", actor="admin", target="0123456789abcdef"))
        with pytest.raises(APIError):
            await js.purge_stream(subjects.AUDIT_STREAM)
        with pytest.raises(APIError):
            await js.delete_msg(subjects.AUDIT_STREAM, 1)
        assert (await js.stream_info(subjects.AUDIT_STREAM)).state.messages == 1
    finally:
        await connection.close()


async def test_audit_pages_oldest_first_and_filters_on_the_server(nats_server: LocalNatsServer) -> None:
    connection = await nats.connect(nats_server.url)
    try:
        js = connection.jetstream()
        await ensure_audit_stream(js, GatewaySettings())
        log = AuditLog(js, GatewaySettings())
        assert await log.read() == ([], None)
        for i in range(5):
            await log.record(AuditEvent(action="request_refused", actor="anonymous", status=401, reason=f"r{i}"))
            await log.record(AuditEvent(action="document_uploaded", actor="00aa11bb22cc33dd", target=f"d{i}"))
        first, after = await log.read(limit=3)
        assert [e.action for _, e in first] == ["request_refused", "document_uploaded", "request_refused"]
        rest, last = await log.read(after=after, limit=100)
        assert len(rest) == 7
        assert last == 10
        assert [s for s, _ in first + rest] == list(range(1, 11))
        refused, _ = await log.read(action="request_refused")
        assert [e.reason for _, e in refused] == [f"r{i}" for i in range(5)]
        mine, _ = await log.read(actor="00aa11bb22cc33dd", limit=2)
        assert [e.target for _, e in mine] == ["d0", "d1"]
        assert await log.read(after=10) == ([], 10)
    finally:
        await connection.close()


async def test_the_api_profile_overrides_the_file_field_by_field(nats_server: LocalNatsServer, tmp_path: Path) -> None:
    texts = tmp_path / "collections.json"
    texts.write_text(json.dumps({"support": {"refusal": "Not in the handbook.", "assistant_name": "Handbook"}}))
    connection = await nats.connect(nats_server.url)
    try:
        kv = await connection.jetstream().create_key_value(bucket=subjects.PROFILES_BUCKET)
        book = ProfileBook(texts, kv)
        assert (await book.get("support")).refusal == "Not in the handbook."
        stored = await book.put(
            "support", CollectionTexts(assistant_name="Orbitly Help", support_contact="a@b.example")
        )
        assert stored.assistant_name == "Orbitly Help"
        assert stored.refusal == "Not in the handbook."
        assert stored.greeting == DEFAULT_GREETING
        assert stored.support_contact == "a@b.example"
        other_replica = ProfileBook(texts, await connection.jetstream().key_value(subjects.PROFILES_BUCKET))
        assert (await other_replica.get("support")).assistant_name == "Orbitly Help"  # no cache to wait for
        assert (await book.get("wiki")).refusal == DEFAULT_REFUSAL
        assert await book.delete("support")
        assert not await book.delete("support")
        assert (await other_replica.get("support")).assistant_name == "Handbook"
    finally:
        await connection.close()
