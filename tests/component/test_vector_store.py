"""The vector store's operations on both embedded backends (qdrant-client local mode and Qdrant
Edge) with the real offline model: what a document's versions look like in the index, what a
hybrid search finds, and that the two backends give the same answers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from rag_common.store.contract import ChunkRecord, Hit, Store
from rag_common.store.edge import EdgeStore
from rag_common.store.embedding import Embedder, get_embedder
from rag_common.store.factory import open_store
from rag_common.store.vectors import VectorStore

pytestmark = pytest.mark.component

BACKENDS = ["local", "edge"]
DOCS = {
    "setup.md": [
        ("Installation", "To install Orbitly, download the installer from the account page.", "ops"),
        ("Installation", "Run the installer and accept the licence; it takes about two minutes.", "ops"),
        ("Uninstalling", "To remove Orbitly, open Settings and choose Uninstall.", "ops"),
    ],
    "pricing.md": [
        ("Plans", "The Pro plan costs 12 euros a month and includes priority support.", "sales"),
        ("Refunds", "Refunds are paid back to the card within ten working days.", "sales"),
    ],
    "otters.md": [("Otters", "The otter pool is cleaned every Tuesday by the keepers.", "zoo")],
}
QUESTIONS = ["how do I install it", "how much is the pro plan", "when is the otter pool cleaned", "refund card"]


@pytest.fixture(scope="module")
def embedder(model_dir: Path) -> Embedder:
    return get_embedder(model_dir)


def make_store(backend: str, folder: Path) -> Store:
    if backend == "edge":
        return EdgeStore(folder / "edge")
    return VectorStore(QdrantClient(path=str(folder / "local")), local=True)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    store = make_store(request.param, tmp_path)
    yield store
    store.close()


def records(embedder: Embedder, source: str, version: str = "v1") -> list[ChunkRecord]:
    chunks = DOCS[source]
    dense, sparse = embedder.embed_passages([f"{section}\n{text}" for section, text, _ in chunks])
    return [
        ChunkRecord(
            i,
            d,
            s,
            {
                "text": f"{text} ({version})",
                "source": source,
                "section": section,
                "chunk_index": i,
                "chunks_total": len(chunks),
                "request_id": f"req-{version}",
                "page": None,
                "metadata": {"team": team, "tags": ["a", "b"]},
            },
        )
        for i, ((section, text, team), d, s) in enumerate(zip(chunks, dense, sparse, strict=True))
    ]


def load(store: Store, embedder: Embedder) -> None:
    store.ensure_collection("docs")
    for source in DOCS:
        store.replace_document("docs", source, "v1", records(embedder, source))


def search(store: Store, embedder: Embedder, question: str, **options: object) -> list[tuple[str, str]]:
    dense, sparse = embedder.embed_query(question)
    hits = store.hybrid_search("docs", dense, sparse, limit=3, prefetch_limit=20, rrf_k=60, **options)  # type: ignore[arg-type]
    return [(h.payload["source"], h.payload["text"]) for h in hits]


def test_a_missing_collection_reads_as_empty(store: Store) -> None:
    assert store.ping()
    assert not store.collection_exists("docs")
    assert store.document_version("docs", "setup.md") is None
    state = store.document_state("docs", "setup.md")
    assert (state.version, state.request_id, state.chunks) == (None, None, 0)
    assert not store.version_state("docs", "setup.md", "v1").complete
    store.delete_document("docs", "setup.md")  # nothing to delete, no error
    with pytest.raises(ValueError, match="not found"):
        store.count("docs")


def test_a_new_version_replaces_the_old_one_whole(store: Store, embedder: Embedder) -> None:
    load(store, embedder)
    assert store.collection_exists("docs")
    store.ensure_collection("docs")  # a second call keeps the data
    assert store.count("docs") == 6
    state = store.document_state("docs", "setup.md")
    assert (state.version, state.request_id, state.chunks) == ("v1", "req-v1", 3)
    assert store.document_version("docs", "setup.md") == "v1"

    store.replace_document("docs", "setup.md", "v2", records(embedder, "setup.md", "v2"))
    assert store.document_version("docs", "setup.md") == "v2"
    assert store.count("docs") == 6
    assert all("(v2)" in text for source, text in search(store, embedder, "install Orbitly") if source == "setup.md")
    assert store.version_state("docs", "setup.md", "v2").complete
    assert store.version_state("docs", "setup.md", "v1").chunks == 0


def test_an_incomplete_version_is_told_apart_and_the_other_versions_dropped(store: Store, embedder: Embedder) -> None:
    load(store, embedder)
    # A worker that died after its first write: v2 has one chunk of three, v1 is still whole.
    store.replace_document("docs", "setup.md", "v2", records(embedder, "setup.md", "v2")[:1])
    cut = store.version_state("docs", "setup.md", "v2")
    assert (cut.chunks, cut.expected, cut.request_id, cut.complete) == (1, 3, "req-v2", False)
    # replace_document dropped v1 after writing: write v1 back beside v2 to test the repair call.
    store.replace_document("docs", "setup.md", "v1", records(embedder, "setup.md", "v1"))
    store.replace_document("docs", "setup.md", "v2", records(embedder, "setup.md", "v2"))
    store.drop_other_versions("docs", "setup.md", "v2")
    assert store.version_state("docs", "setup.md", "v2").complete
    assert store.document_state("docs", "setup.md").chunks == 3

    store.delete_document("docs", "setup.md")
    assert store.document_version("docs", "setup.md") is None
    assert store.count("docs") == 3


def test_hybrid_search_finds_the_passage_and_honours_filters(store: Store, embedder: Embedder) -> None:
    load(store, embedder)
    assert search(store, embedder, "when is the otter pool cleaned")[0][0] == "otters.md"
    assert search(store, embedder, "how much is the pro plan", fusion="dbsf")[0][0] == "pricing.md"
    assert {s for s, _ in search(store, embedder, "otter pool", filters={"source": "setup.md"})} == {"setup.md"}
    assert {s for s, _ in search(store, embedder, "otter pool", filters={"team": ["sales", "ops"]})} == {
        "setup.md",
        "pricing.md",
    }
    assert search(store, embedder, "otter pool", filters={"team": "nobody"}) == []
    # Similarity is the dense cosine to the question; the vector comes back for diversity.
    dense, sparse = embedder.embed_query("otter pool cleaning")
    hits = store.hybrid_search("docs", dense, sparse, limit=2, prefetch_limit=10, rrf_k=60)
    assert hits[0].dense is not None
    assert len(hits[0].dense) == len(dense)
    assert hits[0].similarity == pytest.approx(sum(a * b for a, b in zip(dense, hits[0].dense, strict=True)))
    assert hits[0].similarity == pytest.approx(store.best_similarities("docs", [dense])[0], abs=1e-4)


def test_rrf_weights_move_the_ranking_toward_one_side(store: Store, embedder: Embedder) -> None:
    load(store, embedder)
    question = "refund card"
    dense_only = search(store, embedder, question, weights=(1.0, 0.0))
    bm25_only = search(store, embedder, question, weights=(0.0, 1.0))
    assert dense_only[0][0] == "pricing.md"
    assert bm25_only[0][0] == "pricing.md"
    plain = search(store, embedder, question)
    assert set(plain) <= set(dense_only) | set(bm25_only) | set(plain)


def test_each_side_takes_its_own_number_of_candidates_into_the_fusion(store: Store, embedder: Embedder) -> None:
    load(store, embedder)
    dense, sparse = embedder.embed_query("Orbitly installer")  # BM25 matches setup.md's three chunks
    for fusion in ("rrf", "dbsf"):

        def fused(prefetch: int, sparse_prefetch: int | None, fusion: str = fusion) -> set[tuple[str, int]]:
            hits = store.hybrid_search(
                "docs",
                dense,
                sparse,
                limit=6,
                prefetch_limit=prefetch,
                sparse_prefetch_limit=sparse_prefetch,
                rrf_k=60,
                fusion=fusion,
            )
            return {(h.payload["source"], h.payload["chunk_index"]) for h in hits}

        assert len(fused(1, None)) <= 2  # one candidate a side when the BM25 side is not set apart
        assert fused(1, 3) == {("setup.md", 0), ("setup.md", 1), ("setup.md", 2)}  # 1 dense + 3 BM25
        assert len(fused(6, 1)) == 6  # the dense side keeps its own six


def test_fetch_chunks_and_best_similarities(store: Store, embedder: Embedder) -> None:
    load(store, embedder)
    found = store.fetch_chunks("docs", [("setup.md", "v1", 1), ("setup.md", "v1", 3), ("pricing.md", "v1", 0)])
    assert set(found) == {("setup.md", 1), ("pricing.md", 0)}
    assert found[("setup.md", 1)]["text"].startswith("Run the installer")
    assert found[("setup.md", 1)]["metadata"] == {"team": "ops", "tags": ["a", "b"]}
    assert store.fetch_chunks("docs", []) == {}
    own = records(embedder, "otters.md")[0].dense
    best = store.best_similarities("docs", [own, [-x for x in own]])
    assert best[0] == pytest.approx(1.0, abs=1e-3)
    assert best[1] < 0.5


def ranked(hits: list[Hit]) -> list[tuple[float, float, str]]:
    return [(-round(h.score, 5), round(h.similarity, 4), str(h.payload["text"])) for h in hits]


def test_both_backends_rank_alike(tmp_path: Path, embedder: Embedder) -> None:
    stores = [make_store(backend, tmp_path) for backend in BACKENDS]
    try:
        for store in stores:
            load(store, embedder)
        for question in QUESTIONS:
            dense, sparse = embedder.embed_query(question)
            for options in ({}, {"fusion": "dbsf"}, {"weights": (2.0, 1.0)}, {"filters": {"team": "sales"}}):
                # Every point, so that hits of equal score (kept in any order) are all in both lists.
                found = [
                    store.hybrid_search("docs", dense, sparse, limit=6, prefetch_limit=6, rrf_k=60, **options)
                    for store in stores
                ]
                local, edge = (sorted(ranked(hits)) for hits in found)
                assert local == edge, (question, options)
    finally:
        for store in stores:
            store.close()


def test_an_edge_store_keeps_its_writes_when_the_process_dies_before_flushing(tmp_path: Path) -> None:
    """Writes are not flushed per call; the shard's log makes them survive a killed process."""
    script = f"""
import os
from pathlib import Path
from rag_common.store.edge import EdgeStore
from rag_common.store.embedding import SparseVector
from rag_common.store.contract import ChunkRecord
store = EdgeStore(Path({str(tmp_path)!r}))
store.ensure_collection("docs")
unit = [1.0] + [0.0] * 383
chunks = [ChunkRecord(i, unit, SparseVector([i], [1.0]), {{"chunks_total": 130, "chunk_index": i}}) for i in range(130)]
store.replace_document("docs", "a.md", "v1", chunks)
os._exit(0)  # no flush, no close
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    store = EdgeStore(tmp_path)
    try:
        assert store.collection_exists("docs")
        assert store.count("docs") == 130
        assert store.version_state("docs", "a.md", "v1").complete
    finally:
        store.close()


def test_open_store_gives_the_chosen_backend_once_per_folder(tmp_path: Path) -> None:
    edge = open_store(None, tmp_path / "q")  # the default
    local = open_store(None, tmp_path / "q", backend="local")
    try:
        assert isinstance(edge, EdgeStore)
        assert isinstance(local, VectorStore)
        assert open_store(None, tmp_path / "q", backend="edge") is edge
        edge.ensure_collection("docs")
        assert edge.collection_exists("docs")
        assert not local.collection_exists("docs")
    finally:
        edge.close()
        local.close()


def test_the_edge_shard_layout_matches_the_store() -> None:
    """The shard is created by a child process that does not import the store: same names, same size."""
    from rag_common.store import contract, edge_shard, embedding

    assert (edge_shard.DENSE, edge_shard.SPARSE, edge_shard.SECOND_DENSE) == (
        contract.DENSE,
        contract.SPARSE,
        contract.SECOND_DENSE,
    )
    assert (edge_shard.DENSE_DIM, edge_shard.SECOND_DIM) == (embedding.DENSE_DIM, embedding.SECOND_DIM)
