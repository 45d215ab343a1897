"""The retriever service alone: in memory and, with the same body, on a real nats-server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rag_common.store.embedding import get_embedder
from rag_common.store.factory import configured_store
from rag_common.transport.streams import QUERY_JSTREAM
from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import IngestRequested, Query, QueryRetrieved, QueryRouted, Route
from rag_ingest.pipeline import index_document
from rag_ingest.settings import IngestSettings
from rag_retriever.app import build_broker
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings
from tests.support.components import BrokerMode

pytestmark = pytest.mark.component

COLLECTION = "component"
DOCUMENTS = {
    "greenhouse.md": b"# Greenhouse\n\n## Watering\n\nThe kiwi greenhouse is watered at 06:40 by the robot Pollux.\n",
    "walrus.md": b"# Walrus enclosure\n\n## Gate\n\nThe walrus enclosure gate code is 4471 on weekdays.\n",
    "parking.md": b"# Parking\n\n## Visitors\n\nVisitors park on level 3 of the north garage.\n",
}


async def test_a_question_gets_the_passages_of_the_document_that_answers_it(
    mode: BrokerMode, model_dir: Path, tmp_path: Path
) -> None:
    embedder = await asyncio.to_thread(get_embedder, model_dir)
    ingest = IngestSettings(model_dir=model_dir, qdrant_path=tmp_path / "qdrant", metrics_port=0)
    store = configured_store(ingest)  # the backend RAG_VECTOR_BACKEND chose
    store.ensure_collection(COLLECTION)
    for source, data in DOCUMENTS.items():
        request = IngestRequested(
            request_id="seed", document_id=source, collection=COLLECTION, source=source, object_name="-",
            content_hash=source, size=len(data),
        )  # fmt: skip
        await asyncio.to_thread(index_document, request, data, embedder, store, ingest)
    settings = RetrieverSettings(metrics_port=0, model_dir=model_dir, qdrant_path=tmp_path / "qdrant", **mode.settings)
    broker, _ = build_broker(settings, setup_telemetry("retriever"), Retriever(settings, embedder, store))
    retrieved: list[QueryRetrieved] = []

    @broker.subscriber(subjects.QUERY_RETRIEVED, stream=QUERY_JSTREAM, durable="probe", pull_sub=True)
    async def capture(msg: QueryRetrieved) -> None:
        retrieved.append(msg)

    query = QueryRouted(
        query=Query(
            request_id="r1", gateway_id="gw", question="What is the walrus enclosure gate code?", collection=COLLECTION
        ),
        route=Route(tier="fast"),
    )
    async with mode.broker(broker) as br:
        await br.publish(query, subjects.QUERY_ROUTED, stream=subjects.QUERY_STREAM)
        await capture.wait_call(timeout=30)
    [result] = retrieved
    found = result.retrieval
    assert not found.refused, found.refusal_reason
    assert found.passages[0].source == "walrus.md"
    assert "4471" in found.passages[0].text
    assert [p.n for p in found.passages] == list(range(1, len(found.passages) + 1))
    assert "retriever" in result.timings_ms
