"""A vector per quotable unit of each chunk, pooled from the chunk's own forward pass (no extra model
run): what lets the generator rank an answer's sentences without running the model per question.

The units are the generator's own (``rag_common.text.quotable.candidate_sentences`` on the chunk as a
passage, planted text excluded), so the generator finds each unit's score again by its text's
``sentence_key`` (``rag_common.store.sentence_vectors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_common.store.embedding import BM25_AVG_LEN, Embedder, SparseVector, Units
from rag_common.store.sentence_vectors import pack
from rag_common.text.quotable import candidate_sentences, sentence_key
from rag_common.wire.messages import ChunkPayload, Passage
from rag_ingest.chunking import Chunk


def chunk_units(chunk: Chunk, injection_spans: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The distinct quotable units of a chunk read alone, in order (what an extractive answer over
    this chunk would choose from)."""
    passage = Passage(n=0, source="", section=chunk.section, text=chunk.text, kind=chunk.kind)
    units = candidate_sentences([passage], excluded={0: list(injection_spans)} if injection_spans else None)
    return list(dict.fromkeys(u.text for u in units))


def embed_chunks(
    embedder: Embedder,
    texts: Sequence[str],
    chunks: Sequence[Chunk],
    payloads: Sequence[ChunkPayload],
    *,
    sentence_vectors: bool,
    bm25_avg_len: float = BM25_AVG_LEN,
) -> tuple[list[list[float]], list[SparseVector], list[dict[str, Any]]]:
    """Each chunk's dense and sparse vectors (``texts``: what is embedded, its context header then
    its text) and the payload fields of its units' vectors (none when ``sentence_vectors`` is off)."""
    if not sentence_vectors:
        dense, sparse = embedder.embed_passages(texts, bm25_avg_len=bm25_avg_len)
        return dense, sparse, [{} for _ in texts]
    units = [chunk_units(c, p.injection_spans) for c, p in zip(chunks, payloads, strict=True)]
    starts = [len(t) - len(c.text) for t, c in zip(texts, chunks, strict=True)]
    dense, sparse, pooled = embedder.embed_passages_pooled(
        texts, [Units(start, own) for start, own in zip(starts, units, strict=True)], bm25_avg_len=bm25_avg_len
    )
    fields = [pack([sentence_key(u) for u in own], vectors) for own, vectors in zip(units, pooled, strict=True)]
    return dense, sparse, fields
