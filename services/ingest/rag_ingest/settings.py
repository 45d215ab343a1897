from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from rag_common.config.settings import StoreSettings
from rag_common.store.embedding import BM25_AVG_LEN


class IngestSettings(StoreSettings):
    """Ingest settings; its own variables start with ``RAG_INGEST_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_INGEST_", extra="ignore", populate_by_name=True)

    chunk_max_tokens: int = Field(200, ge=32, le=256, description="word-piece tokens per chunk (MiniLM reads 256)")
    chunk_overlap_tokens: int = Field(
        40, ge=0, le=128, description="word-piece tokens a chunk repeats from the end of the one before"
    )
    chunk_min_tokens: int = Field(24, ge=0, le=128, description="smaller chunks merge with a neighbour")
    chunk_max_chars: int = Field(
        2000, ge=512, le=16000, description="characters per chunk, whatever the tokenizer counts (e.g. [UNK] runs)"
    )
    context_headers: Literal["off", "path", "fallback", "title"] = Field(
        "title",
        description="put before each chunk's embedded and BM25-indexed text: nothing, its heading path, "
        "or the document title and heading path (the stored and quoted text is never changed)",
    )
    bm25_avg_len: float = Field(
        BM25_AVG_LEN,
        gt=0,
        le=100_000,
        description="BM25 length normalisation: a chunk's term count is compared with this average "
        "(about a third of chunk_max_tokens; fastembed's default is 256)",
    )
    flag_boilerplate: bool = Field(
        True, description="mark link-only and 'Next steps'-style chunks so the retriever ranks them lower"
    )
    pdf_headings: bool = Field(
        True, description="PDF: headings found inside pages and carried over to the next page, not only a first line"
    )
    code_comment_headings: bool = Field(
        False,
        description="Markdown: a level-1 heading after deeper headings is a heading (true, the Markdown rule) "
        "or an unfenced code comment kept as text (false)",
    )
    keep_collapsed: bool = Field(
        False,
        description="HTML: read the body of a closed <details> (true: documentation sites that fold real content "
        "into toggles; the injection rules still read it) or leave it out as hidden from a reader (false)",
    )
    sentence_vectors: bool = Field(
        True,
        description="store a vector per quotable sentence of each chunk, pooled from the chunk's own forward "
        "pass (no extra model run), so extractive answers need no model run per question",
    )
    ack_wait_s: float = Field(
        60.0, gt=0, description="redelivery delay of a document whose worker died (live workers extend it)"
    )
    max_chunks_per_document: int = Field(
        2000, ge=1, le=100_000, description="a document cut into more chunks fails (status failed, too_many_chunks)"
    )
    archive_max_bytes: int = Field(
        100 * 2**20,
        ge=2**20,
        le=2**31,
        description="a Word or PowerPoint file whose archive unpacks to more bytes fails (a zip bomb or huge media)",
    )
    archive_max_members: int = Field(
        5000, ge=10, le=1_000_000, description="a Word or PowerPoint archive with more files inside fails"
    )
    object_read_timeout_s: float = Field(
        10.0,
        gt=0,
        description="reading an upload's bytes from the object store may take this long, plus a second per "
        "MiB; longer counts as a failure to retry (nats-py's read waits forever for a chunk that never comes)",
    )
    orphan_grace_s: float = Field(
        600.0,
        ge=0,
        description="stored bytes younger than this are never deleted as orphans (an upload being accepted "
        "stores its bytes before its status record)",
    )
    orphan_sweep_interval_s: float = Field(
        3600.0,
        ge=0,
        description="how often ingest deletes orphan objects (bytes no status record names); it also sweeps "
        "at start-up; 0: at start-up only",
    )
    concurrency: int = Field(2, ge=1, le=64, description="documents one replica indexes at once")
    drain_timeout_s: float = Field(
        50.0,
        gt=0,
        le=600,
        description="on SIGTERM, documents being indexed get this long to finish, then go back to the queue",
    )
    metrics_port: int = 9101
