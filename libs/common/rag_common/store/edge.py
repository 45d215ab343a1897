"""The embedded vector store on Qdrant Edge: Qdrant's Rust shard in the process (``qdrant-edge-py``).

Same operations, payloads, point ids and results as ``VectorStore`` (qdrant-client's local mode),
but dense search, BM25 (sparse vectors with the IDF modifier), prefetch and fusion (RRF, DBSF) run in
Rust instead of Python, so a search does not score every stored point in Python.

One shard per user collection, in ``<path>/<qdrant collection name>``. A shard allows one opener per
folder, so a process shares one ``EdgeStore`` per location (as with local mode).

The binding holds the GIL for the whole of each call (measured: an event loop in the same process
stalls for as long as the call runs), so every call here is kept short: points are written in
batches of ``UPSERT_BATCH``, nothing flushes per write (the shard's write-ahead log makes each
write durable), the shard is flushed only after ``FLUSH_AFTER_POINTS`` writes (it bounds the log
replayed when the shard is opened again) and on ``close``, and the segment optimizer is never run
while serving (it holds the GIL for seconds). Creating a shard and its payload indexes takes
0.5-1.5 s of such calls on a loaded 2-core machine (enough to make JetStream redeliver a message
whose in-progress beats were due meanwhile), so a new shard is created by a short-lived child
process and only opened here (``EdgeShard.load``, 30-130 ms).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qdrant_edge import (
    CountRequest,
    EdgeShard,
    FieldCondition,
    Filter,
    Fusion,
    MatchAny,
    MatchValue,
    Point,
    Prefetch,
    Query,
    QueryBatchRequest,
    QueryRequest,
    ScrollRequest,
    SparseVector,
    UpdateOperation,
)

from rag_common.store.contract import (
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
from rag_common.store.embedding import SparseVector as TextSparseVector

CREATE_TIMEOUT_S = 120.0
UPSERT_BATCH = 64  # ~3-15 ms of GIL per call on the 2-core machine
FLUSH_AFTER_POINTS = 20_000


class EdgeStore:
    """The operations the services need, on one Qdrant Edge shard per collection."""

    local = True

    def __init__(self, path: Path) -> None:
        self.path = path
        self._shards: dict[str, EdgeShard] = {}
        self._unflushed: dict[str, int] = {}
        self._deleted: dict[str, int] = {}
        # One writer or reader at a time: a document's replacement (write new, drop old) is seen
        # whole by a search, as with local mode.
        self._lock = threading.Lock()

    # --- shards ---

    def _folder(self, name: str) -> Path:
        return self.path / name

    def _shard(self, name: str) -> EdgeShard | None:
        """The open shard of a collection, opened from disk on first use; None if it does not exist."""
        shard = self._shards.get(name)
        if shard is None and (self._folder(name) / "edge_config.json").exists():
            shard = self._shards[name] = EdgeShard.load(str(self._folder(name)))
        return shard

    def _existing(self, name: str) -> EdgeShard:
        shard = self._shard(name)
        if shard is None:
            raise ValueError(f"Collection {name} not found")
        return shard

    def _written(self, name: str, shard: EdgeShard, points: int) -> None:
        self._unflushed[name] = self._unflushed.get(name, 0) + points
        if self._unflushed[name] >= FLUSH_AFTER_POINTS:
            shard.flush()
            self._unflushed[name] = 0

    def _deleting(self, name: str, shard: EdgeShard, delete: UpdateOperation) -> None:
        """Apply a delete, closing the shard when that gives memory back.

        A shard keeps deleted points' data in memory until it is closed: once they are worth
        compacting (``worth_compacting``, the rule local mode uses too) it is closed, and opened
        again from disk on its next use (~30-40 ms), which gives a deleted batch's memory back
        (docs/FAULTS.md, "Store memory after a hostile batch").
        """
        before = shard.info().points_count
        shard.update(delete)
        left = shard.info().points_count
        deleted = self._deleted[name] = self._deleted.get(name, 0) + before - left
        if worth_compacting(deleted, deleted + left):
            shard.flush()
            shard.close()
            del self._shards[name]
            self._unflushed.pop(name, None)
            self._deleted.pop(name, None)

    # --- the VectorStore operations ---

    def ping(self) -> bool:
        """Whether the store's folder is there (made if missing): an embedded store has no server to ask."""
        with self._lock:
            self.path.mkdir(parents=True, exist_ok=True)
        return self.path.is_dir()

    def collection_exists(self, collection: str) -> bool:
        """Whether the collection has a shard on disk."""
        with self._lock:
            return self._shard(qdrant_collection(collection)) is not None

    def ensure_collection(self, collection: str) -> None:
        """Create the collection's shard unless it exists, with the current layout."""
        name = qdrant_collection(collection)
        with self._lock:
            if self._shard(name) is not None:
                return
            folder = self._folder(name)
            if folder.exists():  # a creation cut short before its config was written
                shutil.rmtree(folder)
            # In a child process: the calls hold the GIL, waiting for a child does not.
            subprocess.run(
                [sys.executable, "-m", "rag_common.store.edge_shard", str(folder)],
                check=True,
                timeout=CREATE_TIMEOUT_S,
                capture_output=True,
            )
            self._shards[name] = EdgeShard.load(str(folder))

    def document_version(self, collection: str, document_id: str) -> str | None:
        """Content hash of the indexed version of a document, or None if it is not indexed."""
        with self._lock:
            shard = self._shard(qdrant_collection(collection))
            if shard is None:
                return None
            points, _ = shard.scroll(
                ScrollRequest(limit=1, filter=_match("document_id", document_id), with_payload=["content_hash"])
            )
        return str(points[0].payload["content_hash"]) if points and points[0].payload else None

    def document_state(self, collection: str, document_id: str) -> IndexedDocument:
        """What the index holds of a document: version, the upload that indexed it, chunk count."""
        with self._lock:
            shard = self._shard(qdrant_collection(collection))
            if shard is None:
                return IndexedDocument(None, None, 0)
            selector = _match("document_id", document_id)
            points, _ = shard.scroll(
                ScrollRequest(limit=1, filter=selector, with_payload=["content_hash", "request_id"])
            )
            if not points or not points[0].payload:
                return IndexedDocument(None, None, 0)
            payload = points[0].payload
            count = shard.count(CountRequest(exact=True, filter=selector))
        return IndexedDocument(str(payload["content_hash"]), payload.get("request_id"), count)

    def replace_document(self, collection: str, document_id: str, version: str, chunks: Sequence[ChunkRecord]) -> None:
        """Write the new version's chunks, then drop the old version's: a failure leaves the old one."""
        name = qdrant_collection(collection)
        points = [
            Point(
                point_id(document_id, version, c.chunk_index),
                {
                    DENSE: c.dense,
                    SPARSE: SparseVector(indices=c.sparse.indices, values=c.sparse.values),
                    **({SECOND_DENSE: c.second_dense} if c.second_dense is not None else {}),
                },
                {**c.payload, "document_id": document_id, "content_hash": version},
            )
            for c in chunks
        ]
        with self._lock:
            shard = self._existing(name)
            for start in range(0, len(points), UPSERT_BATCH):
                shard.update(UpdateOperation.upsert_points(points[start : start + UPSERT_BATCH]))
            self._written(name, shard, len(points))
            self._drop_other_versions(name, document_id, version)  # same lock: readers see old or new

    def version_state(self, collection: str, document_id: str, version: str) -> VersionState:
        """How many chunks of one version of a document the index holds, and how many it should."""
        selector = Filter(
            must=[
                FieldCondition(key="document_id", match=MatchValue(document_id)),
                FieldCondition(key="content_hash", match=MatchValue(version)),
            ]
        )
        with self._lock:
            shard = self._shard(qdrant_collection(collection))
            if shard is None:
                return VersionState(0, None, None)
            points, _ = shard.scroll(
                ScrollRequest(limit=1, filter=selector, with_payload=["request_id", "chunks_total", "hidden_text"])
            )
            if not points or not points[0].payload:
                return VersionState(0, None, None)
            payload = points[0].payload
            count = shard.count(CountRequest(exact=True, filter=selector))
        return version_of(count, payload)

    def drop_other_versions(self, collection: str, document_id: str, version: str) -> None:
        """Delete every chunk of a document that is not of ``version``."""
        with self._lock:
            self._drop_other_versions(qdrant_collection(collection), document_id, version)

    def _drop_other_versions(self, name: str, document_id: str, version: str) -> None:
        stale = Filter(
            must=[FieldCondition(key="document_id", match=MatchValue(document_id))],
            must_not=[FieldCondition(key="content_hash", match=MatchValue(version))],
        )
        self._deleting(name, self._existing(name), UpdateOperation.delete_points_by_filter(stale))

    def delete_document(self, collection: str, document_id: str) -> None:
        """Remove every chunk of the document, whatever its version."""
        with self._lock:
            name = qdrant_collection(collection)
            shard = self._shard(name)
            if shard is not None:
                self._deleting(name, shard, UpdateOperation.delete_points_by_filter(_match("document_id", document_id)))

    def has_second_dense(self, collection: str) -> bool:
        """Whether the collection's shard has the second dense model's vector (created since it exists)."""
        name = qdrant_collection(collection)
        with self._lock:
            self._existing(name)
            config = json.loads((self._folder(name) / "edge_config.json").read_text())
        return SECOND_DENSE in (config.get("vectors") or {})

    def search_sides(
        self, collection: str, sides: Sequence[SideQuery], *, filters: dict[str, Any] | None = None
    ) -> list[list[tuple[str, float]]]:
        """Each side's own ranking, as (point id, raw score), in one batch call; the retriever fuses them.

        Same contract as ``VectorStore.search_sides``.
        """
        query_filter = build_edge_filter(filters or {})
        batch = QueryBatchRequest(
            [
                QueryRequest(
                    limit=side.limit,
                    query=Query.Nearest(
                        SparseVector(indices=side.vector.indices, values=side.vector.values)
                        if isinstance(side.vector, TextSparseVector)
                        else list(side.vector),
                        using=side.using,
                    ),
                    filter=query_filter,
                    with_payload=False,
                    with_vector=False,
                )
                for side in sides
            ]
        )
        with self._lock:
            results = self._existing(qdrant_collection(collection)).query_batch(batch)
        return [[(str(point.id), float(point.score)) for point in points] for points in results]

    def fetch_hits(self, collection: str, ids: Sequence[str], dense: list[float]) -> dict[str, Hit]:
        """Points by id as hits; same contract as ``VectorStore.fetch_hits``."""
        if not ids:
            return {}
        wanted: list[int | uuid.UUID | str] = list(ids)
        with self._lock:
            records = self._existing(qdrant_collection(collection)).retrieve(
                wanted, with_payload=True, with_vector=[DENSE]
            )
        query = query_array(dense)
        return {str(record.id): hit_of(record, query) for record in records}

    def hybrid_search(
        self,
        collection: str,
        dense: list[float],
        sparse: TextSparseVector,
        *,
        limit: int,
        prefetch_limit: int,
        rrf_k: int,
        sparse_prefetch_limit: int | None = None,
        filters: dict[str, Any] | None = None,
        weights: tuple[float, float] | None = None,
        fusion: str = "rrf",
    ) -> list[Hit]:
        """Dense and BM25 candidates fused in the shard: RRF (``weights``: dense, BM25) or DBSF.

        Same contract as ``VectorStore.hybrid_search``: ``similarity`` is the dense cosine of each
        hit to the query, ``dense`` the hit's vector.
        """
        query_filter = build_edge_filter(filters or {})
        fused = Fusion.Dbsf() if fusion == "dbsf" else Fusion.Rrf(k=rrf_k, weights=list(weights) if weights else None)
        request = QueryRequest(
            limit=limit,
            prefetches=[
                Prefetch(limit=prefetch_limit, query=Query.Nearest(dense, using=DENSE), filter=query_filter),
                Prefetch(
                    limit=sparse_prefetch_limit or prefetch_limit,
                    query=Query.Nearest(SparseVector(indices=sparse.indices, values=sparse.values), using=SPARSE),
                    filter=query_filter,
                ),
            ],
            query=fused,  # type: ignore[arg-type]  # the stubs type Fusion.Rrf/Dbsf apart from Fusion
            with_payload=True,
            with_vector=[DENSE],
        )
        with self._lock:
            points = self._existing(qdrant_collection(collection)).query(request)
        query = query_array(dense)
        return [hit_of(point, query) for point in points]

    def fetch_chunks(
        self, collection: str, keys: Sequence[tuple[str, str, int]]
    ) -> dict[tuple[str, int], dict[str, Any]]:
        """Payloads of the chunks named by (document_id, version, chunk_index), by (document_id, chunk_index).

        A chunk that does not exist (before the first, after the last) is absent.
        """
        if not keys:
            return {}
        ids: list[int | uuid.UUID | str] = [point_id(d, v, i) for d, v, i in keys]
        with self._lock:
            records = self._existing(qdrant_collection(collection)).retrieve(ids, with_payload=True, with_vector=False)
        found: dict[tuple[str, int], dict[str, Any]] = {}
        for record in records:
            payload = dict(record.payload or {})
            found[(str(payload.get("document_id", "")), int(payload.get("chunk_index", 0)))] = payload
        return found

    def scroll_chunks(self, collection: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` chunk payloads (without sentence vectors); as ``VectorStore.scroll_chunks``."""
        found: list[dict[str, Any]] = []
        offset: Any = None
        with self._lock:
            shard = self._existing(qdrant_collection(collection))
            while len(found) < limit:
                points, offset = shard.scroll(
                    ScrollRequest(offset=offset, limit=min(256, limit - len(found)), with_payload=True)
                )
                found.extend({k: v for k, v in (p.payload or {}).items() if k != "sentence_vectors"} for p in points)
                if offset is None or not points:
                    break
        return found

    def count(self, collection: str) -> int:
        """Live points in the collection."""
        # The shard's own tally of live points: exact (deletions included) and O(1), where an
        # exact CountRequest walks every point (1.2 ms at 20k, on every retrieval's calibration check).
        with self._lock:
            return self._existing(qdrant_collection(collection)).info().points_count

    def best_similarities(self, collection: str, vectors: Sequence[list[float]]) -> list[float]:
        """The best dense cosine each vector reaches in a collection (0.0 when it is empty)."""
        if not vectors:
            return []
        batch = QueryBatchRequest(
            [QueryRequest(limit=1, query=Query.Nearest(list(v), using=DENSE), with_payload=False) for v in vectors]
        )
        with self._lock:
            results = self._existing(qdrant_collection(collection)).query_batch(batch)
        return [float(points[0].score) if points else 0.0 for points in results]

    def close(self) -> None:
        """Flush and close every open shard; a later call opens them again from disk."""
        with self._lock:
            shards, self._shards = self._shards, {}
            self._unflushed.clear()
            self._deleted.clear()
            for shard in shards.values():
                shard.flush()
                shard.close()


def _match(key: str, value: Any) -> Filter:
    return Filter(must=[FieldCondition(key=key, match=MatchValue(value))])


def build_edge_filter(filters: dict[str, Any]) -> Filter | None:
    """``{"source": "a.md", "team": ["x", "y"]}`` → a shard filter; non-core keys are metadata."""
    conditions: list[FieldCondition] = []
    for key, value in filters.items():
        field = key if key in CORE_FILTER_KEYS else f"metadata.{key}"
        match = MatchAny(any=value) if isinstance(value, list) else MatchValue(value)
        conditions.append(FieldCondition(key=field, match=match))
    return Filter(must=list(conditions)) if conditions else None
