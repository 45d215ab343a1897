"""The answer cache on a real nats-server: what one process keeps, every retriever replica finds;
what one process invalidates, every replica stops serving.

Two ``AnswerCache`` objects on their own connections stand for two retriever replicas (each
following the bucket's question keys), a third for the evaluator, and a ``DocumentIndex`` on a
fourth connection for the gateway or ingest moving the collection's index version. The vectors are
made here (no model): the lookup compares whatever MiniLM gives.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import numpy as np
import pytest
from faststream.nats import NatsBroker

from rag_common.config.settings import ServiceSettings
from rag_common.store.answer_cache import AnswerCache, AnswerCacheSettings, open_answer_cache_bucket
from rag_common.store.docindex import DocumentIndex
from rag_common.wire import subjects
from rag_common.wire.messages import Draft, Evaluation, Passage, Query, QueryAnswered, Retrieval, Route
from rag_devrun.natsserver import LocalNatsServer
from tests.support.polling import eventually

pytestmark = pytest.mark.integration

QUESTION = "How much does the Business plan cost?"
BUSINESS = [1.0, 0.0, 0.0]
REPHRASED = [0.97, 0.243, 0.0]  # cosine 0.97 to BUSINESS
ELSEWHERE = [0.0, 1.0, 0.0]


@dataclass
class Process:
    connection: Any
    cache: AnswerCache
    index: DocumentIndex
    follower: asyncio.Task[None] | None = None


@contextlib.asynccontextmanager
async def process(url: str, settings: AnswerCacheSettings, *, follow: bool) -> AsyncIterator[Process]:
    connection = await nats.connect(url)
    js = connection.jetstream()
    kv = await js.create_key_value(bucket=subjects.ANSWER_CACHE_BUCKET, ttl=settings.answer_cache_ttl_s)
    index = DocumentIndex(js, await js.create_key_value(bucket=subjects.DOC_INDEX_BUCKET))
    found = Process(connection, AnswerCache(kv, settings, index), index)
    if follow:
        found.follower = asyncio.create_task(found.cache.follow(retry_s=0.1))
    try:
        yield found
    finally:
        if found.follower is not None:
            found.follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await found.follower
        await connection.close()


def query(question: str = QUESTION, tenant: str = "tenant-acme", request_id: str = "r1") -> Query:
    return Query(request_id=request_id, gateway_id="g", question=question, tenant=tenant, collection="orbitly")


def embedding(vector: list[float]) -> Any:
    async def embed() -> list[float]:
        return vector

    return embed


def answer_for(asked: Query, key: Any) -> QueryAnswered:
    passage = Passage(n=1, source="pricing.md", text="The Business plan is $24 per user per month.")
    return QueryAnswered(
        query=asked,
        route=Route(tier="fast", model="extractive"),
        retrieval=Retrieval(passages=[passage], cache=key),
        draft=Draft(answer="The Business plan is $24 per user per month [1].", model="extractive", cited=[1]),
        evaluation=Evaluation(flags={"refused": False, "conflicting_sources": False}, flagged=False),
    )


async def test_what_the_evaluator_keeps_every_replica_finds_and_an_index_change_retires_everywhere(
    tmp_path: Path, nats_server: LocalNatsServer
) -> None:
    settings = AnswerCacheSettings(answer_cache_min_cosine=0.95)
    async with (
        process(nats_server.url, settings, follow=True) as one,
        process(nats_server.url, settings, follow=True) as two,
        process(nats_server.url, settings, follow=False) as evaluator,
        process(nats_server.url, settings, follow=False) as gateway,
    ):
        miss = await one.cache.lookup(query(), embedding(BUSINESS))
        assert miss.hit is None
        assert miss.key is not None
        assert miss.key.version == 0
        assert await evaluator.cache.keep(answer_for(query(), miss.key)) is True

        # The same words: found by key at once, on any replica, before any model run.
        async def no_model() -> list[float]:
            raise AssertionError("the same question needs no vector")

        for replica in (one, two):
            exact = await replica.cache.lookup(query(request_id="r2"), no_model)
            assert exact.hit is not None
            assert exact.hit.draft.answer.startswith("The Business plan is $24")

        # A rephrasing: found through each replica's mirror, once the watch has brought the key.
        for replica in (one, two):
            await eventually(_size_of(replica), lambda n: n == 1, timeout_s=10, what="the kept question")
            rephrased = await replica.cache.lookup(query("What does the Business plan cost?"), embedding(REPHRASED))
            assert rephrased.hit is not None
            assert rephrased.cosine == pytest.approx(0.97, abs=1e-3)
            elsewhere = await replica.cache.lookup(query("What does the Business plan cost?"), embedding(ELSEWHERE))
            assert elsewhere.hit is None

        # Another tenant: neither by key nor through the mirror.
        other = await one.cache.lookup(query(tenant="tenant-globex"), embedding(BUSINESS))
        assert other.hit is None

        # An upload or delete elsewhere (the gateway's or ingest's connection) moves the version.
        version = await gateway.index.touch("orbitly")
        for replica in (one, two):
            after = await replica.cache.lookup(query(request_id="r4"), embedding(BUSINESS))
            assert after.hit is None
            assert after.key is not None
            assert after.key.version == version


def _size_of(replica: Process) -> Callable[[], Awaitable[int]]:
    async def size() -> int:
        return len(replica.cache.mirror)

    return size


async def test_a_kept_answer_expires_with_the_bucket_ttl(tmp_path: Path, nats_server: LocalNatsServer) -> None:
    settings = AnswerCacheSettings(answer_cache_ttl_s=1.0)
    async with process(nats_server.url, settings, follow=True) as retriever:
        miss = await retriever.cache.lookup(query(), embedding(BUSINESS))
        assert await retriever.cache.keep(answer_for(query(), miss.key)) is True
        assert (await retriever.cache.lookup(query(request_id="r2"), embedding(BUSINESS))).hit is not None

        async def hit() -> bool:
            found = await retriever.cache.lookup(query("What does the Business plan cost?"), embedding(REPHRASED))
            return found.hit is not None

        await eventually(hit, bool, timeout_s=10, what="the rephrasing served through the mirror")
        await eventually(hit, lambda served: not served, timeout_s=15, what="the answer expired")
        assert (await retriever.cache.lookup(query(request_id="r3"), embedding(BUSINESS))).hit is None


async def test_a_bucket_declared_with_other_limits_takes_the_settings(
    tmp_path: Path, nats_server: LocalNatsServer
) -> None:
    broker = NatsBroker(nats_server.url)
    await broker.connect()
    try:
        service = ServiceSettings(nats_url=nats_server.url)
        await open_answer_cache_bucket(broker, service, AnswerCacheSettings(answer_cache_ttl_s=3600))
        other = NatsBroker(nats_server.url)  # another process, started with other settings
        await other.connect()
        try:
            limits = AnswerCacheSettings(answer_cache_ttl_s=60, answer_cache_max_bytes=8 * 1024 * 1024)
            kv = await open_answer_cache_bucket(other, service, limits)
            await kv.put("q.x", b"{}")
        finally:
            await other.stop()
        info = await broker.connection.jetstream().stream_info(f"KV_{subjects.ANSWER_CACHE_BUCKET}")
        assert info.config.max_age == 60
        assert info.config.max_bytes == 8 * 1024 * 1024
        assert np.isclose(info.config.max_age or 0, 60)
    finally:
        await broker.stop()
