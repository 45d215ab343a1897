"""Conversation memory in a real NATS key-value bucket: bounded, per collection, redelivery-safe."""

from __future__ import annotations

import asyncio

import pytest
from faststream.nats import NatsBroker

from rag_common.config.settings import ServiceSettings
from rag_common.store.buckets import open_sessions_bucket
from rag_common.wire.messages import Turn
from rag_devrun.natsserver import LocalNatsServer
from rag_gateway.sessions import SessionCollectionMismatch, SessionStore, valid_session_id

pytestmark = pytest.mark.integration


async def store_on(server: LocalNatsServer, max_turns: int = 3) -> tuple[NatsBroker, SessionStore]:
    broker = NatsBroker(server.url)
    await broker.connect()
    kv = await open_sessions_bucket(broker, ServiceSettings(nats_url=server.url), ttl_s=60)
    return broker, SessionStore(kv, max_turns=max_turns)


async def test_turns_are_kept_in_order_and_bounded(nats_server: LocalNatsServer) -> None:
    broker, store = await store_on(nats_server, max_turns=3)
    try:
        for i in range(5):
            await store.record("s1", "docs", f"r{i}", Turn(question=f"q{i}", answer="a" * 5000))
        turns = await store.history("s1", "docs")
        assert [t.question for t in turns] == ["q2", "q3", "q4"]
        assert all(len(t.answer) == 1500 for t in turns)  # an answer is context, not a transcript
    finally:
        await broker.stop()


async def test_a_redelivered_answer_is_recorded_once(nats_server: LocalNatsServer) -> None:
    broker, store = await store_on(nats_server)
    try:
        await store.record("s2", "docs", "same", Turn(question="q"))
        await store.record("s2", "docs", "same", Turn(question="q"))
        assert len(await store.history("s2", "docs")) == 1
    finally:
        await broker.stop()


async def test_concurrent_answers_of_one_session_are_all_kept(nats_server: LocalNatsServer) -> None:
    broker, store = await store_on(nats_server, max_turns=10)
    try:
        await asyncio.gather(*(store.record("s3", "docs", f"r{i}", Turn(question=f"q{i}")) for i in range(4)))
        assert sorted(t.question for t in await store.history("s3", "docs")) == ["q0", "q1", "q2", "q3"]
    finally:
        await broker.stop()


async def test_a_session_never_crosses_collections(nats_server: LocalNatsServer) -> None:
    broker, store = await store_on(nats_server)
    try:
        await store.record("s4", "team-a", "r1", Turn(question="secret plan?"))
        with pytest.raises(SessionCollectionMismatch):
            await store.history("s4", "team-b")
        with pytest.raises(SessionCollectionMismatch):
            await store.record("s4", "team-b", "r2", Turn(question="q"))
        assert [t.question for t in await store.history("s4", "team-a")] == ["secret plan?"]
    finally:
        await broker.stop()


async def test_a_deleted_session_starts_afresh(nats_server: LocalNatsServer) -> None:
    broker, store = await store_on(nats_server)
    try:
        await store.record("s5", "docs", "r1", Turn(question="q"))
        assert await store.delete("s5") is True
        assert await store.history("s5", "docs") == []
        assert await store.delete("s5") is False
        await store.record("s5", "other", "r2", Turn(question="new"))
        assert [t.question for t in await store.history("s5", "other")] == ["new"]
    finally:
        await broker.stop()


@pytest.mark.parametrize("session_id", ["", "a b", "x" * 129, "../etc", "s\n"])
def test_odd_session_ids_are_invalid(session_id: str) -> None:
    assert not valid_session_id(session_id)
