"""The second dense model (``RAG_SECOND_DENSE``) end to end on each embedded store (qdrant-client
local mode, Qdrant Edge) with the real models: ingest's pipeline stores both vectors, the retriever
finds documents through three rankings, a collection created before the second vector existed
still answers, and the ingest service indexes with it (in memory and on a real nats-server)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient, models
from qdrant_edge import EdgeShard

from rag_common.store.contract import DENSE, SECOND_DENSE, SPARSE, SideQuery, Store, qdrant_collection
from rag_common.store.edge import EdgeStore
from rag_common.store.edge_shard import shard_config
from rag_common.store.embedding import DENSE_DIM, Embedder, SecondEmbedder, get_embedder, get_second_embedder
from rag_common.store.vectors import VectorStore
from rag_common.wire.messages import IngestRequested, Query, QueryRouted, Route
from rag_ingest.pipeline import index_document, index_version
from rag_ingest.settings import IngestSettings
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings
from tests.component.test_ingest_component import (
    COLLECTION,
    CONTENT,
    attach_buckets,
    final_status,
    make_ingestor,
    upload,
)
from tests.support.components import BrokerMode

pytestmark = pytest.mark.component

DOCS = {
    "greenhouse.md": "# Greenhouse\n\n## Watering\n\nThe kiwi greenhouse is watered at 06:40 by the robot Pollux.\n",
    "billing.md": "# Billing\n\n## Invoices\n\nInvoices are sent on the first day of each month to the payer.\n",
    "otters.md": "# Otters\n\n## Feeding\n\nThe otters are fed fresh fish at noon, after the keepers clean the pool.\n",
}
QUESTIONS = {
    "When is the kiwi greenhouse watered?": "greenhouse.md",
    "Who gets the monthly invoices?": "billing.md",
    "What do the otters eat?": "otters.md",
}


@pytest.fixture(scope="module")
def embedder(model_dir: Path) -> Embedder:
    return get_embedder(model_dir)


@pytest.fixture(scope="module")
def second(second_dir: Path) -> SecondEmbedder:
    return get_second_embedder(second_dir)


def make_store(backend: str, folder: Path) -> Store:
    if backend == "edge":
        return EdgeStore(folder / "edge")
    return VectorStore(QdrantClient(path=str(folder / "local")), local=True)


@pytest.fixture(params=["local", "edge"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    store = make_store(request.param, tmp_path)
    yield store
    store.close()


def create_old_collection(store: Store, collection: str) -> None:
    """A collection as the store created them before the second vector existed: MiniLM and BM25 only."""
    if isinstance(store, EdgeStore):
        store.path.mkdir(parents=True, exist_ok=True)
        EdgeShard.create(str(store.path / qdrant_collection(collection)), shard_config(second=False)).close()
    else:
        assert isinstance(store, VectorStore)
        store.client.create_collection(
            qdrant_collection(collection),
            vectors_config={DENSE: models.VectorParams(size=DENSE_DIM, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )


def index(
    store: Store, embedder: Embedder, second: SecondEmbedder | None, collection: str = "docs", **overrides: object
) -> IngestSettings:
    settings = IngestSettings(second_dense=second is not None, **overrides)  # type: ignore[arg-type]
    for source, text in DOCS.items():
        data = text.encode()
        request = IngestRequested(
            request_id="r1",
            document_id=hashlib.sha1(source.encode()).hexdigest(),
            collection=collection,
            source=source,
            object_name=source,
            content_hash=hashlib.sha256(data).hexdigest(),
            size=len(data),
        )
        index_document(request, data, embedder, store, settings, second=second)
    return settings


def retriever_settings(**overrides: object) -> RetrieverSettings:
    plain: dict[str, object] = {
        "neighbours": 0,
        "context_budget_tokens": 0,
        "calibrate": False,
        "second_dense": False,  # whatever the environment says
        **overrides,
    }
    return RetrieverSettings(min_similarity=0.0, top_k=3, **plain)  # type: ignore[arg-type]


def ask(retriever: Retriever, question: str, collection: str = "docs") -> list[str]:
    routed = QueryRouted(
        query=Query(request_id="r", gateway_id="g", question=question, collection=collection), route=Route(tier="fast")
    )
    return [p.source for p in retriever.retrieve(routed).retrieval.passages]


def best_similarity(retriever: Retriever, question: str) -> float:
    routed = QueryRouted(
        query=Query(request_id="r", gateway_id="g", question=question, collection="docs"), route=Route(tier="fast")
    )
    return max(p.similarity for p in retriever.retrieve(routed).retrieval.passages)


def second_side_finds(store: Store, second: SecondEmbedder, question: str, collection: str = "docs") -> int:
    """How many points the second model's side alone finds (points without its vector are not searched)."""
    side = SideQuery(SECOND_DENSE, second.embed_query(question), 10)
    return len(store.search_sides(collection, [side])[0])


def test_a_document_is_stored_with_both_vectors_and_a_question_finds_it(
    store: Store, embedder: Embedder, second: SecondEmbedder
) -> None:
    index(store, embedder, second)
    assert store.has_second_dense("docs")
    assert second_side_finds(store, second, "greenhouse") == store.count("docs") == len(DOCS)
    retriever = Retriever(retriever_settings(second_dense=True), embedder, store, second)
    plain = Retriever(retriever_settings(), embedder, store)
    assert retriever.uses_second("docs")
    for question, source in QUESTIONS.items():
        assert ask(retriever, question)[0] == source
        # the relevance threshold reads MiniLM's cosine, whichever rankings were fused
        assert best_similarity(retriever, question) == pytest.approx(best_similarity(plain, question))


def test_a_collection_indexed_before_the_setting_was_on_answers_and_is_upgraded_by_a_new_upload(
    store: Store, embedder: Embedder, second: SecondEmbedder
) -> None:
    off = index(store, embedder, None)
    assert store.has_second_dense("docs")  # every new collection has room for the second vector
    assert second_side_finds(store, second, "greenhouse") == 0  # ... empty while the setting is off
    on = Retriever(retriever_settings(second_dense=True), embedder, store, second)
    for question, source in QUESTIONS.items():
        assert ask(on, question)[0] == source  # the empty side adds nothing
    upgraded = index(store, embedder, second)  # the same bytes again, the setting on: a new version
    assert index_version("h", upgraded) != index_version("h", off)
    assert second_side_finds(store, second, "greenhouse") == store.count("docs") == len(DOCS)


def test_a_collection_created_before_the_second_vector_existed_still_answers(
    store: Store, embedder: Embedder, second: SecondEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    create_old_collection(store, "old")
    caplog.set_level(logging.WARNING)
    index(store, embedder, second, collection="old")  # the setting on: indexed without the second vector
    assert store.count("old") == len(DOCS)
    assert not store.has_second_dense("old")
    assert sum("was created without a vector for the second dense model" in r.message for r in caplog.records) == 1
    retriever = Retriever(retriever_settings(second_dense=True), embedder, store, second)
    plain = Retriever(retriever_settings(), embedder, store)
    for question, source in QUESTIONS.items():
        assert ask(retriever, question, "old")[0] == source
        assert ask(retriever, question, "old") == ask(plain, question, "old")  # MiniLM and BM25 as before
    logged = [r.message for r in caplog.records if "has no vector for the second dense model" in r.message]
    assert len(logged) == 1
    assert "old" in logged[0]


def test_weight_zero_gives_todays_passages_and_the_weight_counts(
    store: Store, embedder: Embedder, second: SecondEmbedder
) -> None:
    index(store, embedder, second)
    today = Retriever(retriever_settings(), embedder, store)
    zero = Retriever(retriever_settings(second_dense=True, second_dense_weight=0), embedder, store, second)
    assert zero.second is None
    assert not zero.uses_second("docs")
    questions = [*QUESTIONS, "robot", "fish and pool cleaning", "first day"]
    for question in questions:
        assert ask(zero, question) == ask(today, question)
    alone = Retriever(
        retriever_settings(second_dense=True, dense_weight=0, sparse_weight=0), embedder, store, second
    )  # only the second model's ranking: still finds each document by its meaning
    for question, source in QUESTIONS.items():
        assert ask(alone, question)[0] == source


async def test_the_ingest_service_stores_both_vectors_when_the_setting_is_on(
    mode: BrokerMode, model_dir: Path, second_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_SECOND_DENSE", "true")
    monkeypatch.setenv("RAG_SECOND_MODEL_DIR", str(second_dir))
    ingestor, broker = await make_ingestor(mode, model_dir, tmp_path)
    assert ingestor.settings.second_dense
    ingestor.second = await asyncio.to_thread(get_second_embedder, ingestor.settings.resolved_second_model_dir)
    async with mode.broker(broker) as br:
        await attach_buckets(ingestor, br, mode)
        document_id = await upload(ingestor, br, CONTENT, "r1")
        indexed = await final_status(ingestor.status, document_id)
        assert indexed.status == "indexed"
        assert indexed.chunks >= 1
    assert second_side_finds(ingestor.store, ingestor.second, "watering", COLLECTION) == indexed.chunks
    retriever = Retriever(
        retriever_settings(second_dense=True, second_model_dir=second_dir), ingestor.embedder, ingestor.store
    )
    assert ask(retriever, "When is the kiwi greenhouse watered?", COLLECTION) == ["greenhouse.md"]
