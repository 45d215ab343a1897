"""The vector store: one Qdrant collection per user collection, dense + BM25 vectors per chunk.

Three backends behind one set of operations (``Store``): a Qdrant server (``QDRANT_URL``, any
number of processes), Qdrant Edge (``RAG_VECTOR_BACKEND=edge``, the default: Qdrant's Rust shard in
the process; ``rag_common.store.edge``) and qdrant-client's local mode (``RAG_VECTOR_BACKEND=local``,
Python scoring).
The two embedded ones allow a single opener per folder, so a process shares one store per location;
``rag_common.store.factory`` opens them, above both backends, so neither imports the other's opener.

Local mode only marks a deleted point as deleted: its vectors, payload and sparse vector stay in
the process until the collection is loaded again. ``VectorStore.compact`` reloads a local
collection from its folder once deleted points fill most of it, which is what gives a large
deleted batch's memory back (docs/FAULTS.md, "Store memory after a hostile batch").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.local.local_collection import EPSILON, LocalCollection
from qdrant_client.local.qdrant_local import QdrantLocal

from rag_common.store.contract import (
    COMPACT_DELETED_SHARE,
    COMPACT_MIN_DELETED,
    CORE_FILTER_KEYS,
    DENSE,
    SECOND_DENSE,
    SPARSE,
    ChunkRecord,
    Hit,
    IndexedDocument,
    SideQuery,
    VersionState,
    hit_of,
    point_id,
    qdrant_collection,
    query_array,
    version_of,
    worth_compacting,
)
from rag_common.store.embedding import DENSE_DIM, SECOND_DIM, SparseVector
from rag_common.store.memory import release_memory

UPSERT_BATCH = 256
COMPACT_ATTEMPTS = 3  # a write during a reload discards it; the last attempt reads under the lock

log = logging.getLogger(__name__)


class VectorStore:
    """Thin typed layer over ``QdrantClient`` with the few operations the services need."""

    def __init__(
        self,
        client: QdrantClient,
        *,
        local: bool,
        compact_min_deleted: int = COMPACT_MIN_DELETED,
        compact_deleted_share: float = COMPACT_DELETED_SHARE,
    ) -> None:
        self.client = client
        self.local = local
        self.compact_min_deleted = compact_min_deleted
        self.compact_deleted_share = compact_deleted_share
        # Local mode is not safe for concurrent threads; a server needs no lock.
        self._lock: threading.Lock | None = threading.Lock() if local else None
        self._writes = 0  # local writes so far: a compaction built across one is discarded
        self._compaction_state = threading.Lock()  # guards the two below
        self._compacting = False
        self._compact_pending: set[str] = set()

    @contextmanager
    def _guard(self, *, write: bool = False) -> Iterator[None]:
        if self._lock is None:
            yield
        else:
            with self._lock:
                if write:
                    self._writes += 1
                yield

    def ping(self) -> bool:
        """Whether the server (or the local folder) answers a listing."""
        with self._guard():
            self.client.get_collections()
        return True

    def collection_exists(self, collection: str) -> bool:
        """Whether the collection exists."""
        with self._guard():
            return self.client.collection_exists(qdrant_collection(collection))

    def ensure_collection(self, collection: str) -> None:
        """Create the collection unless it exists, with its vectors and payload indexes."""
        name = qdrant_collection(collection)
        with self._guard():
            if self.client.collection_exists(name):
                return
            self._writes += 1  # only creating counts as a write: checking does not discard a reload
            self.client.create_collection(
                name,
                vectors_config={
                    DENSE: models.VectorParams(size=DENSE_DIM, distance=models.Distance.COSINE),
                    SECOND_DENSE: models.VectorParams(size=SECOND_DIM, distance=models.Distance.COSINE),
                },
                sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            )
            if not self.local:
                for key in ("document_id", "source"):
                    self.client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)

    def document_version(self, collection: str, document_id: str) -> str | None:
        """Content hash of the indexed version of a document, or None if it is not indexed."""
        name = qdrant_collection(collection)
        with self._guard():
            if not self.client.collection_exists(name):
                return None
            points, _ = self.client.scroll(
                name, scroll_filter=_match("document_id", document_id), limit=1, with_payload=["content_hash"]
            )
        return str(points[0].payload["content_hash"]) if points and points[0].payload else None

    def document_state(self, collection: str, document_id: str) -> IndexedDocument:
        """What the index holds of a document: version, the upload that indexed it, chunk count."""
        name = qdrant_collection(collection)
        with self._guard():
            if not self.client.collection_exists(name):
                return IndexedDocument(None, None, 0)
            selector = _match("document_id", document_id)
            points, _ = self.client.scroll(
                name, scroll_filter=selector, limit=1, with_payload=["content_hash", "request_id"]
            )
            if not points or not points[0].payload:
                return IndexedDocument(None, None, 0)
            payload = points[0].payload
            count = self.client.count(name, count_filter=selector, exact=True).count
        return IndexedDocument(str(payload["content_hash"]), payload.get("request_id"), count)

    def replace_document(self, collection: str, document_id: str, version: str, chunks: Sequence[ChunkRecord]) -> None:
        """Write the new version's chunks, then drop the old version's: a failure leaves the old one."""
        name = qdrant_collection(collection)
        with self._guard(write=True):
            # One batch of points at a time: a document's chunks exist once as records, not twice.
            for start in range(0, len(chunks), UPSERT_BATCH):
                points = [
                    models.PointStruct(
                        id=point_id(document_id, version, c.chunk_index),
                        vector=_point_vectors(c),
                        payload={**c.payload, "document_id": document_id, "content_hash": version},
                    )
                    for c in chunks[start : start + UPSERT_BATCH]
                ]
                self.client.upsert(name, points=points, wait=True)
            self._drop_other_versions(name, document_id, version)  # same lock: readers see old or new
        self.compact(collection)

    # --- Re-index repair: kept apart from the engine calls above on purpose. ---
    # A worker that dies between writing a new version and dropping the old one leaves both in the
    # index (readers would see the old revision's text next to the new one), and one that dies
    # between two upsert batches leaves the new version incomplete. The retried message asks
    # ``version_state`` whether its version is whole and, if so, only drops the other versions.

    def version_state(self, collection: str, document_id: str, version: str) -> VersionState:
        """How many chunks of one version of a document the index holds, and how many it should."""
        name = qdrant_collection(collection)
        selector = models.Filter(
            must=[
                models.FieldCondition(key="document_id", match=models.MatchValue(value=document_id)),
                models.FieldCondition(key="content_hash", match=models.MatchValue(value=version)),
            ]
        )
        with self._guard():
            if not self.client.collection_exists(name):
                return VersionState(0, None, None)
            points, _ = self.client.scroll(
                name, scroll_filter=selector, limit=1, with_payload=["request_id", "chunks_total", "hidden_text"]
            )
            if not points or not points[0].payload:
                return VersionState(0, None, None)
            payload = points[0].payload
            count = self.client.count(name, count_filter=selector, exact=True).count
        return version_of(count, payload)

    def drop_other_versions(self, collection: str, document_id: str, version: str) -> None:
        """Delete every chunk of a document that is not of ``version``."""
        with self._guard(write=True):
            self._drop_other_versions(qdrant_collection(collection), document_id, version)
        self.compact(collection)

    def _drop_other_versions(self, name: str, document_id: str, version: str) -> None:
        stale = models.Filter(
            must=[models.FieldCondition(key="document_id", match=models.MatchValue(value=document_id))],
            must_not=[models.FieldCondition(key="content_hash", match=models.MatchValue(value=version))],
        )
        self.client.delete(name, points_selector=models.FilterSelector(filter=stale), wait=True)

    def delete_document(self, collection: str, document_id: str) -> None:
        """Remove every chunk of the document, whatever its version."""
        name = qdrant_collection(collection)
        with self._guard(write=True):
            if self.client.collection_exists(name):
                self.client.delete(
                    name, points_selector=models.FilterSelector(filter=_match("document_id", document_id)), wait=True
                )
        self.compact(collection)

    def has_second_dense(self, collection: str) -> bool:
        """Whether the collection has the second dense model's vector (created since it exists)."""
        with self._guard():
            vectors = self.client.get_collection(qdrant_collection(collection)).config.params.vectors
        return isinstance(vectors, dict) and SECOND_DENSE in vectors

    def search_sides(
        self, collection: str, sides: Sequence[SideQuery], *, filters: dict[str, Any] | None = None
    ) -> list[list[tuple[str, float]]]:
        """Each side's own ranking, as (point id, raw score), in one batch request.

        The retriever fuses them and fetches only the fused best (``fetch_hits``): payloads and
        vectors of every side's candidates (170 by default) would cost more than the search.
        """
        query_filter = build_filter(filters or {})
        requests = [
            models.QueryRequest(
                query=models.SparseVector(indices=side.vector.indices, values=side.vector.values)
                if isinstance(side.vector, SparseVector)
                else side.vector,
                using=side.using,
                limit=side.limit,
                filter=query_filter,
                with_payload=False,
                with_vector=False,
            )
            for side in sides
        ]
        with self._guard():
            results = self.client.query_batch_points(qdrant_collection(collection), requests=requests)
        return [[(str(point.id), float(point.score)) for point in result.points] for result in results]

    def fetch_hits(self, collection: str, ids: Sequence[str], dense: list[float]) -> dict[str, Hit]:
        """Points by id as hits: score 0, ``similarity`` their MiniLM cosine to ``dense``.

        A point gone meanwhile (its document replaced) is absent.
        """
        if not ids:
            return {}
        with self._guard():
            points = self.client.retrieve(
                qdrant_collection(collection), ids=list(ids), with_payload=True, with_vectors=[DENSE]
            )
        query = query_array(dense)
        return {str(point.id): hit_of(point, query) for point in points}

    def hybrid_search(
        self,
        collection: str,
        dense: list[float],
        sparse: SparseVector,
        *,
        limit: int,
        prefetch_limit: int,
        rrf_k: int,
        sparse_prefetch_limit: int | None = None,
        filters: dict[str, Any] | None = None,
        weights: tuple[float, float] | None = None,
        fusion: str = "rrf",
    ) -> list[Hit]:
        """Dense and BM25 candidates fused by reciprocal rank fusion in Qdrant's Query API.

        ``similarity`` is the dense cosine of each hit to the query (fusion scores are rank-based
        and say nothing absolute), which the retriever's relevance threshold uses.
        ``prefetch_limit`` dense and ``sparse_prefetch_limit`` BM25 candidates (default: as many
        as dense) go into the fusion. ``weights``
        (dense, BM25) weigh the two rankings in the fusion; None weighs them equally. ``fusion``
        ``dbsf`` fuses the scores instead (distribution-based score fusion: each side's scores
        normalised by their mean ± 3 standard deviations, then summed; no weights).
        """
        query_filter = build_filter(filters or {})
        with self._guard():
            result = self.client.query_points(
                qdrant_collection(collection),
                prefetch=[
                    models.Prefetch(query=dense, using=DENSE, limit=prefetch_limit, filter=query_filter),
                    models.Prefetch(
                        query=models.SparseVector(indices=sparse.indices, values=sparse.values),
                        using=SPARSE,
                        limit=sparse_prefetch_limit or prefetch_limit,
                        filter=query_filter,
                    ),
                ],
                query=models.FusionQuery(fusion=models.Fusion.DBSF)
                if fusion == "dbsf"
                else models.RrfQuery(rrf=models.Rrf(k=rrf_k, weights=list(weights) if weights else None)),
                limit=limit,
                with_payload=True,
                with_vectors=[DENSE],
            )
        query = query_array(dense)
        return [hit_of(point, query) for point in result.points]

    def fetch_chunks(
        self, collection: str, keys: Sequence[tuple[str, str, int]]
    ) -> dict[tuple[str, int], dict[str, Any]]:
        """Payloads of the chunks named by (document_id, version, chunk_index), by (document_id, chunk_index).

        A chunk that does not exist (before the first, after the last) is absent.
        """
        if not keys:
            return {}
        ids = [point_id(d, v, i) for d, v, i in keys]
        with self._guard():
            points = self.client.retrieve(qdrant_collection(collection), ids=ids, with_payload=True)
        found: dict[tuple[str, int], dict[str, Any]] = {}
        for point in points:
            payload = dict(point.payload or {})
            found[(str(payload.get("document_id", "")), int(payload.get("chunk_index", 0)))] = payload
        return found

    def scroll_chunks(self, collection: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` chunk payloads of a collection, without sentence vectors, in the store's order.

        What an assessment plans its units and distractors from.
        """
        name = qdrant_collection(collection)
        found: list[dict[str, Any]] = []
        offset: Any = None
        with self._guard():
            while len(found) < limit:
                points, offset = self.client.scroll(
                    name, limit=min(256, limit - len(found)), offset=offset, with_payload=True, with_vectors=False
                )
                found.extend({k: v for k, v in (p.payload or {}).items() if k != "sentence_vectors"} for p in points)
                if offset is None or not points:
                    break
        return found

    def count(self, collection: str) -> int:
        """Live points in the collection, counted exactly."""
        with self._guard():
            return self.client.count(qdrant_collection(collection), exact=True).count

    def best_similarities(self, collection: str, vectors: Sequence[list[float]]) -> list[float]:
        """The best dense cosine each vector reaches in a collection (0.0 when it is empty)."""
        best: list[float] = []
        with self._guard():
            for vector in vectors:
                result = self.client.query_points(qdrant_collection(collection), query=vector, using=DENSE, limit=1)
                best.append(float(result.points[0].score) if result.points else 0.0)
        return best

    # --- Memory after large deletes (docs/FAULTS.md): local mode only. ---

    def _local_engine(self) -> QdrantLocal | None:
        engine = getattr(self.client, "_client", None)
        return engine if self.local and isinstance(engine, QdrantLocal) else None

    def held_points(self, collection: str) -> int:
        """Points the store keeps for a collection, deleted ones not compacted yet included.

        Equal to ``count`` on a Qdrant server, whose optimizer drops deleted points on its own.
        """
        engine = self._local_engine()
        if engine is None:
            return self.count(collection)
        with self._guard():
            held = engine.collections.get(qdrant_collection(collection))
            return 0 if held is None else len(held.ids_inv)

    def compact(self, collection: str, *, force: bool = False) -> bool:
        """Reload a local collection from its folder without its deleted points; True when done.

        Runs when deleted points pass ``compact_min_deleted`` and ``compact_deleted_share`` of the
        held ones (or with ``force``), then returns the freed memory to the system. The reload
        reads the collection's own sqlite file outside the lock, so searches and writes go on
        meanwhile; the loaded collection replaces the old one under the lock only if no write
        happened in between, so a reader sees the old or the new collection, never a partial
        one. After two reloads discarded that way the third is read under the lock.
        A local store in memory (``:memory:``) has no folder and is not compacted.

        Called after every delete. One compaction runs at a time per store: a call meanwhile
        leaves its collection to the running one, which looks at it again when it is done.
        """
        engine = self._local_engine()
        if engine is None:
            return False
        with self._compaction_state:
            if self._compacting:
                self._compact_pending.add(collection)
                return False
            self._compacting = True
        done = False
        pending = {collection}
        try:
            while pending:
                current = pending.pop()
                compacted = self._compact_once(engine, current, force=force and current == collection)
                done = done or (compacted and current == collection)
                with self._compaction_state:
                    pending |= self._compact_pending
                    self._compact_pending.clear()
                    if not pending:
                        self._compacting = False
        except BaseException:
            with self._compaction_state:
                self._compacting = False
            raise
        return done

    def _compact_once(self, engine: QdrantLocal, collection: str, *, force: bool) -> bool:
        name = qdrant_collection(collection)
        for attempt in range(COMPACT_ATTEMPTS):
            locked = attempt == COMPACT_ATTEMPTS - 1
            fresh: LocalCollection | None = None
            started = time.monotonic()
            with self._guard():
                old = engine.collections.get(name)
                path = engine._collection_path(name)
                if old is None or path is None or not (force or self._worth_compacting(old)):
                    return False
                writes = self._writes
                if locked:
                    fresh = _reload(old, path, force_disable_check_same_thread=engine.force_disable_check_same_thread)
            if fresh is None:
                fresh = _reload(old, path, force_disable_check_same_thread=engine.force_disable_check_same_thread)
            with self._guard():
                swapped = self._writes == writes and engine.collections.get(name) is old
                if swapped:
                    engine.collections[name] = fresh
            if not swapped:
                fresh.close()
                continue
            held = len(old.ids_inv)
            old.close()
            del old
            release_memory()
            seconds = time.monotonic() - started
            log.info("compacted %s: %d points held, %d live, in %.2f s", name, held, len(fresh.ids_inv), seconds)
            return True
        return False

    def _worth_compacting(self, held: LocalCollection) -> bool:
        deleted = int(np.count_nonzero(held.deleted))
        return worth_compacting(deleted, len(held.ids_inv), self.compact_min_deleted, self.compact_deleted_share)

    def close(self) -> None:
        """Close the client (a local store lets go of its folder)."""
        self.client.close()


def _reload(old: LocalCollection, path: str, *, force_disable_check_same_thread: bool) -> LocalCollection:
    """A local collection loaded again from its folder: the points the sqlite file holds.

    Loading stores dense vectors as given, in float64; they are kept as a live collection keeps
    them (float32, unit length for cosine), so scores and memory match the collection replaced.
    """
    fresh = LocalCollection(old.config, path, force_disable_check_same_thread=force_disable_check_same_thread)
    fresh.text_indexes = dict(old.text_indexes)
    for vector_name, params in fresh.vectors_config.items():
        vectors = np.asarray(fresh.vectors[vector_name], dtype=np.float32)
        if params.distance == models.Distance.COSINE and len(vectors):
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = np.where(norms > EPSILON, vectors / np.maximum(norms, EPSILON), vectors).astype(np.float32)
        fresh.vectors[vector_name] = vectors
    return fresh


def _point_vectors(chunk: ChunkRecord) -> dict[str, Any]:
    vectors: dict[str, Any] = {
        DENSE: chunk.dense,
        SPARSE: models.SparseVector(indices=chunk.sparse.indices, values=chunk.sparse.values),
    }
    if chunk.second_dense is not None:
        vectors[SECOND_DENSE] = chunk.second_dense
    return vectors


def _match(key: str, value: Any) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key=key, match=models.MatchValue(value=value))])


def build_filter(filters: dict[str, Any]) -> models.Filter | None:
    """``{"source": "a.md", "team": ["x", "y"]}`` → a Qdrant filter; non-core keys are metadata."""
    conditions: list[models.Condition] = []
    for key, value in filters.items():
        field = key if key in CORE_FILTER_KEYS else f"metadata.{key}"
        if isinstance(value, list):
            conditions.append(models.FieldCondition(key=field, match=models.MatchAny(any=value)))
        else:
            conditions.append(models.FieldCondition(key=field, match=models.MatchValue(value=value)))
    return models.Filter(must=conditions) if conditions else None
