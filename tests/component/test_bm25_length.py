"""BM25 length normalisation (``RAG_INGEST_BM25_AVG_LEN``): what ingest writes, and how it ranks."""

from __future__ import annotations

from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from rag_common.store.embedding import BM25_AVG_LEN, Embedder, get_embedder
from rag_common.store.vectors import VectorStore
from rag_common.wire.messages import IngestRequested
from rag_ingest.pipeline import index_document
from rag_ingest.settings import IngestSettings

pytestmark = pytest.mark.component

SHORT = "The otter pool is cleaned on Tuesdays."
# The same word twice, in a text of about sixty BM25 terms (stop words do not count).
LONG = (
    "Keepers feed the penguins at noon, weigh the tortoises monthly, repaint benches, sweep paths, "
    "check fences, restock kiosks, count visitors, water plants, trim hedges, polish signs, "
    "answer questions, guide tours, clean windows, mend nets, sort tickets, file reports, "
    "test alarms, wash vans, order fish, log temperatures, inspect gates, brief volunteers, "
    "update maps, print leaflets, greet schools, and the otter pool gets fresh otter toys."
)


@pytest.fixture(scope="module")
def embedder(model_dir: Path) -> Embedder:
    return get_embedder(model_dir)


def weight(embedder: Embedder, text: str, avg_len: float) -> float:
    term = next(iter(embedder.sparse.query_embed("otter"))).indices.tolist()[0]
    vector = embedder.embed_sparse([text], bm25_avg_len=avg_len)[0]
    return vector.values[vector.indices.index(term)]


def test_a_chunk_is_weighed_against_the_average_length_given(embedder: Embedder) -> None:
    # fastembed's 256 counts a 60-term chunk as short; our default counts it as average
    assert weight(embedder, LONG, 256.0) > weight(embedder, LONG, BM25_AVG_LEN) > weight(embedder, LONG, 16.0)
    # the default is what embed_passages writes
    _, sparse = embedder.embed_passages([LONG])
    assert sparse[0] == embedder.embed_sparse([LONG])[0]
    assert sparse[0] != embedder.embed_sparse([LONG], bm25_avg_len=256.0)[0]


def bm25_first(embedder: Embedder, avg_len: float) -> str:
    """Index both texts with ``avg_len`` and return the source BM25 alone ranks first for "otter"."""
    store = VectorStore(QdrantClient(location=":memory:"), local=True)
    settings = IngestSettings(bm25_avg_len=avg_len, context_headers="off")
    for source, text in (("short.md", SHORT), ("long.md", LONG)):
        request = IngestRequested(
            request_id="r",
            document_id=source,
            collection="zoo",
            source=source,
            object_name=source,
            content_hash=source,
            size=len(text),
        )
        index_document(request, text.encode(), embedder, store, settings)
    dense, sparse = embedder.embed_query("otter")
    hits = store.hybrid_search("zoo", dense, sparse, limit=2, prefetch_limit=2, rrf_k=60, weights=(0.0, 1.0))
    return str(hits[0].payload["source"])


def test_ingest_writes_bm25_vectors_with_the_setting(embedder: Embedder) -> None:
    # Against a long average the long chunk's two "otter"s win; against a short one its length loses.
    assert bm25_first(embedder, 10_000.0) == "long.md"
    assert bm25_first(embedder, 8.0) == "short.md"
