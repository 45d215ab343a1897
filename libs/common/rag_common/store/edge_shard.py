"""A Qdrant Edge shard's layout, and its creation (``python -m rag_common.store.edge_shard FOLDER``).

Kept apart from ``rag_common.store.edge`` so that the child process ``EdgeStore.ensure_collection``
starts to create a shard imports only ``qdrant_edge`` (~0.2 s), not the embedder and qdrant-client.
"""

from __future__ import annotations

import sys

from qdrant_edge import (
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    Modifier,
    PayloadSchemaType,
    UpdateOperation,
)

DENSE = "dense"  # the same names as rag_common.store.contract (a test checks)
SPARSE = "bm25"
SECOND_DENSE = "dense_second"
DENSE_DIM = 384
SECOND_DIM = 384
INDEXED_KEYS = ("document_id", "content_hash", "source")


def shard_config(*, second: bool = True) -> EdgeConfig:
    """A collection's layout, so a shard made by an older release is opened as it was made.

    ``second=False`` is one created before the second dense vector existed
    (what its room costs: docs/decisions/0300-decisions-in-force.md).
    """
    vectors = {DENSE: EdgeVectorParams(size=DENSE_DIM, distance=Distance.Cosine)}
    if second:
        vectors[SECOND_DENSE] = EdgeVectorParams(size=SECOND_DIM, distance=Distance.Cosine)
    return EdgeConfig(vectors=vectors, sparse_vectors={SPARSE: EdgeSparseVectorParams(modifier=Modifier.Idf)})


def create_shard(folder: str) -> None:
    """Create a collection's shard with its payload indexes, flushed and closed."""
    shard = EdgeShard.create(folder, shard_config())
    for key in INDEXED_KEYS:
        shard.update(UpdateOperation.create_field_index(key, PayloadSchemaType.Keyword))
    shard.flush()
    shard.close()


if __name__ == "__main__":
    create_shard(sys.argv[1])
