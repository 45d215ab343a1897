"""A document's chunks as the retriever hands them to a later stage: parsed, chunked and marked by
ingest's own functions, with no server or vector store."""

from __future__ import annotations

from rag_common.wire.messages import IngestRequested, Passage
from rag_ingest.chunking import chunk_blocks
from rag_ingest.parsing import parse_document
from rag_ingest.pipeline import chunk_payload


def ingested_passages(source: str, data: bytes, *, stored_section: bool = True) -> list[Passage]:
    """The passages of ``data`` with ingest's marks. ``stored_section=False`` gives each its own
    heading as written, as an index made before ingest withheld planted headings still holds it."""
    request = IngestRequested(
        request_id="r", document_id="d", collection="c", source=source, object_name="o", content_hash="h", size=1
    )
    chunks = chunk_blocks(
        parse_document(source, data), lambda t: len(t.split()), max_tokens=200, overlap_tokens=0, min_tokens=1
    )
    passages = []
    for n, chunk in enumerate(chunks, start=1):
        payload = chunk_payload(request, chunk)
        passages.append(
            Passage(
                n=n,
                source=payload.source,
                section=payload.section if stored_section else chunk.section,
                chunk_index=payload.chunk_index,
                text=payload.text,
                injection_spans=payload.injection_spans,
            )
        )
    return passages
