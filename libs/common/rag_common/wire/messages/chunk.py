"""What the vector store keeps with each chunk: written by ingest, read back by the retriever."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rag_common.wire.names import Collection

# What a chunk holds (``rag_ingest.chunking``): running text, one table row, one FAQ pair.
ChunkKind = Literal["text", "table", "faq"]


class ChunkPayload(BaseModel):
    """A stored chunk's payload: its text, where it came from, and what ingest marked in it.

    ``document_id`` and ``content_hash`` are set by the vector store when it writes the chunk (the
    version it belongs to); ``injection_spans`` are character offsets into ``text`` of planted
    instructions, so no later stage quotes them; ``boilerplate`` marks navigation sections;
    ``sentence_keys`` and ``sentence_vectors`` hold a vector per quotable unit of ``text``
    (``rag_common.store.sentence_vectors``), empty when ingest stored none.
    Unknown keys are ignored, so chunks written by a newer ingest stay readable.
    """

    model_config = ConfigDict(extra="ignore")

    text: str
    source: str
    section: str = ""
    section_path: list[str] = Field(default_factory=list)
    page: int | None = None
    chunk_index: int = 0
    kind: ChunkKind = "text"
    chunk_hash: str = ""
    collection: Collection = "default"
    metadata: dict[str, str] = Field(default_factory=dict)
    injection_spans: list[tuple[int, int]] = Field(default_factory=list)
    injection_kinds: list[str] = Field(default_factory=list)
    boilerplate: bool = False
    # Text of the document its parser left out because a reader does not see it (white, tiny, hidden,
    # off-screen), per reason; the same on every chunk of a version, so "unchanged" can report it.
    hidden_text: dict[str, int] = Field(default_factory=dict)
    sentence_keys: list[str] = Field(default_factory=list)
    sentence_vectors: str = ""
    request_id: str = ""  # which upload indexed this version (status repair)
    chunks_total: int = 0  # chunks of this version: a retried ingest tells a whole version from one cut short
    document_id: str = ""
    content_hash: str = ""

    def stored(self) -> dict[str, Any]:
        """The JSON payload ingest hands the vector store (which adds ``document_id``, ``content_hash``)."""
        return self.model_dump(mode="json", exclude={"document_id", "content_hash"})
