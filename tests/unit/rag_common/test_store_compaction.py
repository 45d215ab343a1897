"""The embedded store gives a large delete's points back (docs/FAULTS.md).

Local mode only marks deleted points; ``VectorStore`` reloads a collection from its folder once
deleted points fill most of it. These tests use the real local engine on a temporary folder with
hand-made vectors (no model), and look at what a search returns before, during and after.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient
from qdrant_client.local.local_collection import LocalCollection
from qdrant_client.local.qdrant_local import QdrantLocal

from rag_common.store import vectors
from rag_common.store.contract import ChunkRecord, Hit
from rag_common.store.embedding import DENSE_DIM, SparseVector
from rag_common.store.memory import release_memory
from rag_common.store.vectors import VectorStore

pytestmark = pytest.mark.unit

CHUNKS = 30  # per document


def vector(document: int, chunk: int) -> list[float]:
    """A unit vector of its own for every chunk: a search for it finds that chunk first, then
    the others in an order without ties (the last component grows with the chunk)."""
    values = [0.0] * DENSE_DIM
    values[(document * CHUNKS + chunk) % (DENSE_DIM - 1)] = 1.0
    values[-1] = 0.01 * (1 + document * CHUNKS + chunk)
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def records(document: int) -> list[ChunkRecord]:
    return [
        ChunkRecord(
            chunk,
            vector(document, chunk),
            SparseVector([document * 1000 + chunk], [1.0]),
            {"text": f"chunk {chunk} of document {document} " * 20, "source": f"d{document}.md", "chunk_index": chunk},
        )
        for chunk in range(CHUNKS)
    ]


def open_local(folder: Path, **thresholds: Any) -> VectorStore:
    return VectorStore(QdrantClient(path=str(folder)), local=True, **thresholds)


def held(store: VectorStore) -> LocalCollection:
    engine = store.client._client
    assert isinstance(engine, QdrantLocal)
    return engine.collections["rag_docs"]


def search(store: VectorStore, document: int, chunk: int, **filters: Any) -> list[Hit]:
    return store.hybrid_search(
        "docs",
        vector(document, chunk),
        SparseVector([document * 1000 + chunk], [1.0]),
        limit=CHUNKS,
        prefetch_limit=CHUNKS,
        rrf_k=60,
        filters=filters or None,
    )


def found(hits: list[Hit]) -> list[tuple[str, int]]:
    return [(h.payload["document_id"], h.payload["chunk_index"]) for h in hits]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[VectorStore]:
    store = open_local(tmp_path / "qdrant", compact_min_deleted=20)
    store.ensure_collection("docs")
    for document in range(3):
        store.replace_document("docs", f"doc-{document}", "v1", records(document))
    yield store
    store.close()


def test_deleting_most_points_compacts_the_collection_and_keeps_the_rest(store: VectorStore, tmp_path: Path) -> None:
    before = search(store, 2, 5, document_id="doc-2")
    assert store.held_points("docs") == 3 * CHUNKS

    store.delete_document("docs", "doc-0")
    store.delete_document("docs", "doc-1")

    assert store.held_points("docs") == CHUNKS  # the 60 deleted points are gone, not only hidden
    assert held(store).vectors["dense"].shape[0] == CHUNKS
    assert store.count("docs") == CHUNKS
    assert found(search(store, 2, 5))[0] == ("doc-2", 5)
    assert {doc for doc, _ in found(search(store, 0, 5))} == {"doc-2"}  # nothing of the deleted ones
    after = search(store, 2, 5, document_id="doc-2")
    assert found(after) == found(before)
    assert [h.similarity for h in after] == pytest.approx([h.similarity for h in before])
    assert store.document_state("docs", "doc-2").chunks == CHUNKS
    assert store.document_state("docs", "doc-0").chunks == 0
    assert sorted(store.fetch_chunks("docs", [("doc-2", "v1", 4), ("doc-0", "v1", 4)])) == [("doc-2", 4)]

    # Writes after the compaction land in the reloaded collection and on disk.
    store.replace_document("docs", "doc-3", "v1", records(3))
    assert found(search(store, 3, 7))[0] == ("doc-3", 7)
    store.close()
    reopened = open_local(tmp_path / "qdrant")
    try:
        assert reopened.count("docs") == 2 * CHUNKS
        assert found(search(reopened, 2, 5, document_id="doc-2")) == found(after)
    finally:
        reopened.close()


def test_a_few_deletes_do_not_reload_the_collection(store: VectorStore) -> None:
    collection = held(store)
    store.delete_document("docs", "doc-0")  # 30 of 90 points: below half

    assert held(store) is collection
    assert store.held_points("docs") == 3 * CHUNKS
    assert store.count("docs") == 2 * CHUNKS


def test_replacing_a_version_counts_as_deleting_the_old_one(store: VectorStore) -> None:
    for document in range(3):
        store.replace_document("docs", f"doc-{document}", "v2", records(document))

    assert store.count("docs") == 3 * CHUNKS
    assert store.held_points("docs") < 6 * CHUNKS  # 90 replaced points were dropped from memory
    assert found(search(store, 1, 3))[0] == ("doc-1", 3)


def test_a_write_during_the_reload_is_kept(store: VectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reload reads the folder without the lock; a write meanwhile discards it and it runs again."""
    real = vectors._reload
    calls = 0

    def reload_then_write(old: LocalCollection, path: str, **kwargs: bool) -> LocalCollection:
        nonlocal calls
        calls += 1
        fresh = real(old, path, **kwargs)
        if calls == 1:  # lands after the folder was read: the collection just read lacks it
            store.replace_document("docs", "doc-9", "v1", records(9))
        return fresh

    monkeypatch.setattr(vectors, "_reload", reload_then_write)
    store.delete_document("docs", "doc-0")
    store.delete_document("docs", "doc-1")

    assert calls == 2
    assert store.count("docs") == 2 * CHUNKS
    assert store.held_points("docs") == 2 * CHUNKS
    assert found(search(store, 9, 4))[0] == ("doc-9", 4)


def test_after_two_discarded_reloads_the_third_holds_the_lock(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = vectors._reload
    under_lock: list[bool] = []

    def reload_then_write(old: LocalCollection, path: str, **kwargs: bool) -> LocalCollection:
        assert store._lock is not None
        under_lock.append(store._lock.locked())
        fresh = real(old, path, **kwargs)
        if len(under_lock) < 3:
            document = 10 + len(under_lock)  # two chunks: deleted points stay more than half
            store.replace_document("docs", f"doc-{document}", "v1", records(document)[:2])
        return fresh

    monkeypatch.setattr(vectors, "_reload", reload_then_write)
    store.delete_document("docs", "doc-0")
    store.delete_document("docs", "doc-1")

    assert under_lock == [False, False, True]
    assert store.count("docs") == store.held_points("docs") == CHUNKS + 4
    assert found(search(store, 11, 1))[0] == ("doc-11", 1)
    assert found(search(store, 12, 1))[0] == ("doc-12", 1)


def test_deletes_during_a_compaction_are_compacted_by_it(store: VectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A delete's own compaction is skipped while another runs; the running one takes it up."""
    calls = 0

    def delete_then_release() -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:  # after the first compaction swapped its collection in
            store.delete_document("docs", "doc-0")
            store.delete_document("docs", "doc-1")
        return release_memory()

    monkeypatch.setattr(vectors, "release_memory", delete_then_release)
    assert store.compact("docs", force=True) is True

    assert calls == 2
    assert store.held_points("docs") == store.count("docs") == CHUNKS


def test_searches_during_compaction_see_every_remaining_point(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search while the collection is reloaded and swapped sees the old or the new collection,
    never none: every one returns all chunks of the document that stays."""
    store.delete_document("docs", "doc-0")  # below the threshold: the deleted points stay held
    expected = {("doc-2", chunk) for chunk in range(CHUNKS)}
    real = vectors._reload
    reloading = threading.Event()
    searched_while_reloading = threading.Event()

    def slow_reload(old: LocalCollection, path: str, **kwargs: bool) -> LocalCollection:
        fresh = real(old, path, **kwargs)
        reloading.set()
        assert searched_while_reloading.wait(10), "searches were blocked by the reload"
        return fresh

    monkeypatch.setattr(vectors, "_reload", slow_reload)
    stop = threading.Event()
    results: list[set[tuple[str, int]]] = []
    failures: list[BaseException] = []

    def searcher() -> None:
        deadline = time.monotonic() + 60
        during = 0
        try:
            while not stop.is_set() and time.monotonic() < deadline:
                was_reloading = reloading.is_set()
                results.append(set(found(search(store, 2, len(results) % CHUNKS, document_id="doc-2"))))
                during += was_reloading
                if during >= 3:
                    searched_while_reloading.set()
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    thread = threading.Thread(target=searcher)
    thread.start()
    try:
        compacted = [store.compact("docs", force=True) for _ in range(5)]
    finally:
        stop.set()
        thread.join(30)
    assert not failures
    assert compacted == [True] * 5
    assert store.held_points("docs") == 2 * CHUNKS
    assert len(results) >= 3
    assert all(result == expected for result in results)


def test_a_store_in_memory_is_not_compacted() -> None:
    store = VectorStore(QdrantClient(location=":memory:"), local=True, compact_min_deleted=1)
    store.ensure_collection("docs")
    store.replace_document("docs", "doc-0", "v1", records(0))
    store.delete_document("docs", "doc-0")

    assert store.compact("docs", force=True) is False
    assert store.count("docs") == 0
