"""Parse → chunk → embed → store, for one document (blocking; run it in a worker thread)."""

from __future__ import annotations

from dataclasses import dataclass

from rag_common.embedding import Embedder
from rag_common.messages import IngestRequested
from rag_common.vectors import ChunkRecord, VectorStore
from rag_ingest.chunking import Chunk, chunk_blocks
from rag_ingest.parsing import parse_document
from rag_ingest.settings import IngestSettings


@dataclass(frozen=True, slots=True)
class IndexResult:
    chunks: int
    unchanged: bool


def make_chunks(request: IngestRequested, data: bytes, embedder: Embedder, settings: IngestSettings) -> list[Chunk]:
    blocks = parse_document(request.source, data)
    return chunk_blocks(
        blocks,
        embedder.count_tokens,
        max_tokens=settings.chunk_max_tokens,
        overlap_tokens=settings.chunk_overlap_tokens,
        min_tokens=settings.chunk_min_tokens,
    )


def index_document(
    request: IngestRequested, data: bytes, embedder: Embedder, store: VectorStore, settings: IngestSettings
) -> IndexResult:
    """Index a document's new version; the old version stays searchable until the new one is written."""
    chunks = make_chunks(request, data, embedder, settings)
    dense, sparse = embedder.embed_passages([c.embedding_text for c in chunks])
    records = [
        ChunkRecord(
            chunk_index=c.chunk_index,
            dense=d,
            sparse=s,
            payload={
                "text": c.text,
                "source": request.source,
                "section": c.section,
                "section_path": list(c.section_path),
                "page": c.page,
                "chunk_index": c.chunk_index,
                "kind": c.kind,
                "chunk_hash": c.content_hash,
                "collection": request.collection,
                "metadata": request.metadata,
            },
        )
        for c, d, s in zip(chunks, dense, sparse, strict=True)
    ]
    store.ensure_collection(request.collection)
    store.replace_document(request.collection, request.document_id, request.content_hash, records)
    return IndexResult(chunks=len(records), unchanged=False)
