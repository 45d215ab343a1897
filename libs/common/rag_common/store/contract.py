"""What every vector store backend shares: vector names, records, operations, the compaction rule.

The names of a point's vectors, the records written and returned, the ``Store`` operations, and
the one rule for when an embedded engine lets go of deleted points.

Kept apart from the backends (``rag_common.store.vectors`` over qdrant-client,
``rag_common.store.edge`` over Qdrant Edge), so the services that rank hits read these types
without either backend, and the two backends share them without importing each other.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from rag_common.store.embedding import SparseVector

DENSE = "dense"
SPARSE = "bm25"
# The second dense model's vector (``RAG_SECOND_DENSE``). Every collection created since it exists
# has room for it, so turning the setting on and uploading the documents again fills it; a
# collection created before has no such vector and is searched without it (``has_second_dense``).
SECOND_DENSE = "dense_second"
CORE_FILTER_KEYS = {"source", "section", "kind", "page", "document_id"}
_POINT_NS = uuid.UUID("6f1d7c1e-3c55-4f4e-9b59-2f2f3c4a9d10")
# A local collection is compacted when at least this many of its points are deleted and they are
# at least this share of the points it holds: small deletes never pay for a reload, and a
# compacted collection holds at most about twice its live points.
COMPACT_MIN_DELETED = 512
COMPACT_DELETED_SHARE = 0.5


def worth_compacting(
    deleted: int, held: int, min_deleted: int = COMPACT_MIN_DELETED, share: float = COMPACT_DELETED_SHARE
) -> bool:
    """When an embedded engine lets go of deleted points: the one rule for both.

    Once they are at least ``min_deleted`` and at least ``share`` of the points held (live and
    deleted).
    """
    return deleted >= min_deleted and deleted >= share * held


def qdrant_collection(collection: str) -> str:
    """The store's name of a collection: a prefix keeps the system's collections apart on a shared server."""
    return f"rag_{collection}"


def hit_of(point: Any, dense: Sequence[float] | np.ndarray) -> Hit:
    """A found point as a ``Hit``: the engine's fused score, and the dense cosine to the query.

    Pass the query as a float64 array (``query_array``) when making many hits of one search: the
    dot product then runs in numpy (a Python sum over 384 values per hit was 15 % of a retrieval).
    """
    vector = point.vector.get(DENSE) if isinstance(point.vector, dict) else point.vector
    payload = dict(point.payload or {})
    score = float(getattr(point, "score", 0.0) or 0.0)  # a point fetched by id has none
    if not isinstance(vector, list) or not vector:
        return Hit(score=score, similarity=0.0, payload=payload, dense=None)
    values = np.asarray(vector, dtype=np.float64)
    query = dense if isinstance(dense, np.ndarray) else query_array(dense)
    n = min(len(values), len(query))
    similarity = float(values[:n] @ query[:n])  # both are unit length
    return Hit(score=score, similarity=similarity, payload=payload, dense=values.tolist())


def query_array(dense: Sequence[float]) -> np.ndarray:
    """A query vector as ``hit_of`` multiplies it."""
    return np.asarray(dense, dtype=np.float64)


def point_id(document_id: str, version: str, chunk_index: int) -> str:
    """The id of one chunk of one version of a document (the same in every backend)."""
    return str(uuid.uuid5(_POINT_NS, f"{document_id}:{version}:{chunk_index}"))


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """A chunk ready to store: its vectors and the payload a passage is built from."""

    chunk_index: int
    dense: list[float]
    sparse: SparseVector
    payload: dict[str, Any]
    second_dense: list[float] | None = None  # the second dense model's vector, when it is on


@dataclass(frozen=True, slots=True)
class IndexedDocument:
    """What the index holds of a document: ingest compares it with an upload to skip bytes indexed already."""

    version: str | None  # content hash of the indexed version; None when not indexed
    request_id: str | None  # the upload whose message indexed it
    chunks: int


@dataclass(frozen=True, slots=True)
class VersionState:
    """One version of a document in the index, as ingest decides whether it is whole.

    Chunks found, chunks it was written with (None when its chunks do not say), the upload
    whose message wrote it, and the text its parser left out as hidden from a reader, per reason.
    """

    chunks: int
    expected: int | None
    request_id: str | None
    hidden_text: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every chunk the version was written with is there (a write cut short is not)."""
        return self.chunks > 0 and self.chunks == self.expected


def version_of(count: int, payload: dict[str, Any]) -> VersionState:
    """A version's state from its chunk count and one of its chunks' payloads."""
    total = payload.get("chunks_total")
    hidden = payload.get("hidden_text")
    return VersionState(
        count,
        int(total) if isinstance(total, int) else None,
        payload.get("request_id"),
        {str(k): int(v) for k, v in hidden.items()} if isinstance(hidden, dict) else {},
    )


@dataclass(frozen=True, slots=True)
class SideQuery:
    """One ranking to search for a question.

    A named vector (``DENSE``, ``SECOND_DENSE``, ``SPARSE``), the question's vector for it, and
    how many candidates it returns.
    """

    using: str
    vector: list[float] | SparseVector
    limit: int


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk as a search returns it, with what the retriever ranks, cites and diversifies with."""

    score: float
    similarity: float
    payload: dict[str, Any]
    dense: list[float] | None = None  # the chunk's dense vector, for diversity (MMR) in the retriever


class Store(Protocol):
    """What the services use of a vector store; ``VectorStore`` and ``EdgeStore`` both provide it."""

    def ping(self) -> bool:
        """Whether the store answers (readiness)."""

    def collection_exists(self, collection: str) -> bool:
        """Whether the collection exists, so a question to an empty collection gets 404 instead of an error."""

    def ensure_collection(self, collection: str) -> None:
        """Create the collection unless it exists (every vector and index it needs)."""

    def document_version(self, collection: str, document_id: str) -> str | None:
        """The content hash of the document's indexed version; None when it is not indexed."""

    def document_state(self, collection: str, document_id: str) -> IndexedDocument:
        """What the index holds of the document: its version, the upload that wrote it, its chunks."""

    def replace_document(self, collection: str, document_id: str, version: str, chunks: Sequence[ChunkRecord]) -> None:
        """Write the new version's chunks, then drop the old version's: a failure leaves the old one."""

    def version_state(self, collection: str, document_id: str, version: str) -> VersionState:
        """How many chunks of that version are there, and how many it was written with."""

    def drop_other_versions(self, collection: str, document_id: str, version: str) -> None:
        """Drop the chunks of every other version of the document (a replaced version left behind)."""

    def delete_document(self, collection: str, document_id: str) -> None:
        """Remove every chunk of the document, whatever its version."""

    def has_second_dense(self, collection: str) -> bool:
        """Whether the collection has the second dense model's vector (created since it exists)."""

    def search_sides(
        self, collection: str, sides: Sequence[SideQuery], *, filters: dict[str, Any] | None = None
    ) -> list[list[tuple[str, float]]]:
        """Each side's own ranking, as (point id, raw score); the retriever fuses them."""

    def fetch_hits(self, collection: str, ids: Sequence[str], dense: list[float]) -> dict[str, Hit]:
        """Points by id as hits, with their MiniLM cosine to ``dense``; a point gone meanwhile is absent."""

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
        """Dense and BM25 candidates fused in the store (RRF or DBSF), for the callers that do not fuse themselves."""

    def fetch_chunks(
        self, collection: str, keys: Sequence[tuple[str, str, int]]
    ) -> dict[tuple[str, int], dict[str, Any]]:
        """Payloads of the chunks named by (document_id, version, chunk_index), by (document_id, chunk_index)."""

    def count(self, collection: str) -> int:
        """Live points in the collection (its chunks)."""

    def scroll_chunks(self, collection: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` chunk payloads in the store's order, without sentence vectors."""

    def best_similarities(self, collection: str, vectors: Sequence[list[float]]) -> list[float]:
        """The best dense cosine each vector reaches in the collection (0.0 when it is empty)."""

    def close(self) -> None:
        """Release the store's files or connection."""
